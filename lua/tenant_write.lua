-- spillway: writes tenant records (src/redis/redis_tenants.h). A standalone script.
--
-- KEYS[1]  the records: a hash of id -> record ("v1 ..."), ids being key digests
-- KEYS[2]  the change log: a stream whose entry ids are 0-<seq>, each with a nonce ('n': the
--          server's TIME and the sequence number) and the ids it changed ('id', repeated)
-- KEYS[3]  the sequence number of the last change (a string key)
-- ARGV[1]  the log's length to keep (entries; older ones are trimmed, and a reader that fell
--          that far behind loads every record again)
-- ARGV[2]  '1' to return the records before, '0' not to
-- ARGV     then pairs: id, record ('' deletes the id)
-- Returns  {seq, before_1, before_2, ...} (before '' when the id had no record), or {seq} alone.
--
-- The records and the log change in one atomic step: a reader that saw seq N has seen every
-- change up to N, and every later change is in the log after 0-N. The nonce tells a reader that
-- the entry 0-N it applied is still the one in the log: after the keys were lost (FLUSHALL, a
-- restart without persistence, a failover to a replica behind) new writes may bring the sequence
-- back to N with other changes, and the reader must then load every record again.
local seq = redis.call('INCR', KEYS[3])
local time = redis.call('TIME')
local nonce = time[1] .. '.' .. time[2] .. '.' .. seq
local want_before = ARGV[2] == '1'
local out = {seq}
local fields = {}
for i = 3, #ARGV, 2 do
  local id, record = ARGV[i], ARGV[i + 1]
  if want_before then
    out[#out + 1] = redis.call('HGET', KEYS[1], id) or ''
  end
  if record == '' then
    redis.call('HDEL', KEYS[1], id)
  else
    redis.call('HSET', KEYS[1], id, record)
  end
  fields[#fields + 1] = 'id'
  fields[#fields + 1] = id
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '0-' .. seq, 'n', nonce, unpack(fields))
return out
