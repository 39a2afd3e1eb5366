-- spillway: what changed in the tenant records since a reader's last sequence number
-- (src/redis/redis_tenants.h). Reads only. A standalone script.
--
-- KEYS[1]  the records hash, KEYS[2] the change log stream, KEYS[3] the sequence key
-- ARGV[1]  the last sequence number the reader applied
-- ARGV[2]  at most this many log entries
-- ARGV[3]  the nonce of that entry ('' when ARGV[1] is 0)
-- Returns  {seq, complete, last, last_nonce, resets, id_1, record_1, id_2, record_2, ...}:
--   seq        the sequence number now
--   complete   1 when the log still holds the reader's last entry, unchanged, and every entry
--              after it; 0 when not (trimmed, or the keys were lost and written again): the
--              reader must load every record again
--   last       the sequence number of the last entry returned (the reader's next ARGV[1])
--   last_nonce its nonce (the reader's next ARGV[3])
--   resets     how many of the entries returned say a counter reset happened (field 'r')
--   then each id the entries named, with its record now ('' when deleted).
local function nonce_of(entry)
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'n' then return fields[i + 1] end
  end
  return ''
end
local seq = tonumber(redis.call('GET', KEYS[3]) or '0')
local since = tonumber(ARGV[1])
if since > 0 then
  local mine = redis.call('XRANGE', KEYS[2], '0-' .. since, '0-' .. since)
  -- A reader that loaded without a nonce (the log was gone then) checks nothing here: it reloads
  -- when the sequence moves and the log cannot show what moved it.
  if #mine == 0 then
    if ARGV[3] ~= '' then return {seq, 0, since, '', 0} end
  elseif nonce_of(mine[1]) ~= ARGV[3] then
    return {seq, 0, since, '', 0}
  end
end
if seq == since then return {seq, 1, since, ARGV[3], 0} end
if seq < since then return {seq, 0, since, '', 0} end
local entries = redis.call('XRANGE', KEYS[2], '0-' .. (since + 1), '+', 'COUNT', ARGV[2])
if #entries == 0 then return {seq, 0, since, '', 0} end
local first = tonumber(string.match(entries[1][1], '^0%-(%d+)$'))
if first ~= since + 1 then return {seq, 0, since, '', 0} end
local last = tonumber(string.match(entries[#entries][1], '^0%-(%d+)$'))
local out = {seq, 1, last, nonce_of(entries[#entries]), 0}
local seen = {}
for _, entry in ipairs(entries) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'r' then
      out[5] = out[5] + 1
    elseif fields[i] == 'id' then
      local id = fields[i + 1]
      if not seen[id] then
        seen[id] = true
        out[#out + 1] = id
        out[#out + 1] = redis.call('HGET', KEYS[1], id) or ''
      end
    end
  end
end
return out
