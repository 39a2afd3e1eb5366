-- spillway: the members holding an RLQS bucket and what each asks for (src/redis/redis_quota_shares.h,
-- docs/SPEC.md §9.7). A standalone script.
--
-- KEYS[1]  the bucket's hash: member -> "<demand> <until, ms of the Redis server's clock>"
-- ARGV[1]  the member (a stream's id)
-- ARGV[2]  its demand (units per fill interval; -1: not known yet)
-- ARGV[3]  how long it holds the bucket, ms (> 0); 0: it leaves
-- ARGV[4]  the most members returned
-- Returns  {demand of ARGV[1], the other live members' demands...}; members past their time are
--          deleted, and the hash expires with the last member's time.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local hold = tonumber(ARGV[3])
if hold <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return {}
end
local latest = now + hold
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. latest)
local most = tonumber(ARGV[4])
local out = {ARGV[2]}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then
    local demand, untils = string.match(all[i + 1], '^(%S+) (%S+)$')
    local until_ms = tonumber(untils or '0') or 0
    if until_ms <= now then
      redis.call('HDEL', KEYS[1], all[i])
    else
      if until_ms > latest then latest = until_ms end
      if #out < most then out[#out + 1] = demand end
    end
  end
end
redis.call('PEXPIRE', KEYS[1], latest - now)
return out
