-- spillway: undoes the charges of a reservation (lua/all_or_nothing.lua with reserve 1) when
-- another slot of the same request denied it. A standalone script.
--
-- KEYS[i]  a key the reservation charged; when KEYS has one more than ARGV's triples, the last
--          is the reservation's record (lua/all_or_nothing.lua), deleted with the charges
-- ARGV     three values per key i: its value before the charge (DUMP, '' when it was absent),
--          its expiry then (PEXPIRETIME: ms since the epoch, -1 none, -2 absent) and the value
--          the charge wrote (DUMP)
-- Returns  how many keys were restored.
--
-- A key is restored only when it still holds exactly what the charge wrote: nothing touched it
-- since, so the value before is what it would hold had the request never been charged. When
-- anything else wrote it in between, the charge stays (the limiter under-admits by that cost
-- until it resets; it never over-admits). The check and the restore are one atomic step, and
-- a late or repeated refund finds the key changed and does nothing.
local restored = 0
local charged = #ARGV / 3
if #KEYS > charged then redis.call('DEL', KEYS[#KEYS]) end
for i = 1, charged do
  local a = (i - 1) * 3
  local before, expires, written = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
  if written ~= '' and redis.call('DUMP', KEYS[i]) == written then
    if before == '' then
      redis.call('DEL', KEYS[i])
    elseif expires >= 0 then
      redis.call('RESTORE', KEYS[i], expires, before, 'REPLACE', 'ABSTTL')
    else
      redis.call('RESTORE', KEYS[i], 0, before, 'REPLACE')
    end
    restored = restored + 1
  end
end
return restored
