-- spillway: one step of loading every tenant record (src/redis/redis_tenants.h). Reads only. A
-- standalone script.
--
-- KEYS[1]  the records hash, KEYS[2] the change log, KEYS[3] the sequence key
-- ARGV[1]  the HSCAN cursor ('0' to start)
-- ARGV[2]  the HSCAN COUNT hint
-- Returns  {seq, nonce, next_cursor, id_1, record_1, ...}: the sequence number now and the
--          nonce of its log entry ('' when there is none: the reader follows the log from its
--          first step's pair), the cursor ('0' when done), records.
local seq = tonumber(redis.call('GET', KEYS[3]) or '0')
local nonce = ''
if seq > 0 then
  local entry = redis.call('XRANGE', KEYS[2], '0-' .. seq, '0-' .. seq)
  if #entry == 1 then
    local fields = entry[1][2]
    for i = 1, #fields, 2 do
      if fields[i] == 'n' then nonce = fields[i + 1] end
    end
  end
end
local step = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
local out = {seq, nonce, step[1]}
for _, value in ipairs(step[2]) do
  out[#out + 1] = value
end
return out
