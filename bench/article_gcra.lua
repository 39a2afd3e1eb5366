-- The textbook GCRA script of the source article, rewritten for comparison only (never used by
-- spillway): one float TAT per key under GET / SET / PEXPIRE, `now` from the caller, no remainder
-- (so not exact), no monotonic clock. bench/script_cpu.sh measures spillway's scripts against it.
-- KEYS[1] the key; ARGV: emission interval (µs), burst offset (µs), now (µs).
local key = KEYS[1]
local interval, offset, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', key))
if tat == nil then
  redis.call('SET', key, now + interval)
  redis.call('PEXPIRE', key, offset + interval)
  return {1, 0}
end
if now < tat - offset then return {0, tat - offset - now} end
redis.call('SET', key, math.max(now, tat) + interval)
redis.call('PEXPIRE', key, offset + interval)
return {1, 0}
