-- spillway: writes tenant records (src/redis/redis_tenants.h). A standalone script.
--
-- KEYS[1]  the records: a hash of id -> record ("v1 ..."), ids being key digests
-- KEYS[2]  the change log: a stream whose entry ids are 0-<seq>, each with a nonce ('n': the
--          server's TIME and the sequence number) and the ids it changed ('id', repeated)
-- KEYS[3]  the sequence number of the last change (a string key)
-- ARGV[1]  the log's length to keep (entries; older ones are trimmed, and a reader that fell
--          that far behind loads every record again)
-- ARGV[2]  '1' to return the records before, '0' not to; 'r' for an entry that says a counter
--          reset happened (field 'r'; no pairs, no record changes: every reader forgets the
--          denials it remembers)
-- ARGV     then pairs: id, record ('' deletes the id)
-- Returns  {seq, before_1, before_2, ...} (before '' when the id had no record), or {seq} alone.
--
-- The records and the log change in one atomic step: a reader that saw seq N has seen every
-- change up to N, and every later change is in the log after 0-N. The nonce tells a reader that
-- the entry 0-N it applied is still the one in the log: after the keys were lost (FLUSHALL, a
-- restart without persistence, a failover to a replica behind) new writes may bring the sequence
-- back to N with other changes, and the reader must then load every record again.
-- The sequence number continues from the larger of the sequence key and the log's last id, so
-- that a lost or evicted sequence key cannot make XADD refuse every write. The log entry is
-- appended first: if that fails, nothing was written.
local seq = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
local info = redis.pcall('XINFO', 'STREAM', KEYS[2])
if type(info) == 'table' and info.err == nil then
  for i = 1, #info - 1, 2 do
    if info[i] == 'last-generated-id' then
      local top = tonumber(string.match(info[i + 1], '^0%-(%d+)$'))
      if top ~= nil and top > seq then seq = top end
    end
  end
end
seq = seq + 1
local time = redis.call('TIME')
local nonce = time[1] .. '.' .. time[2] .. '.' .. seq
local want_before = ARGV[2] == '1'
local out = {seq}
local fields = {'n', nonce}
if ARGV[2] == 'r' then fields[#fields + 1] = 'r'; fields[#fields + 1] = '1' end
for i = 3, #ARGV, 2 do
  if want_before then
    out[#out + 1] = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  end
  fields[#fields + 1] = 'id'
  fields[#fields + 1] = ARGV[i]
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '0-' .. seq, unpack(fields))
redis.call('SET', KEYS[3], seq)
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return out
