-- spillway: forgets the state of keys (Operation::kReset: an operator resets a caller's counters).
-- A standalone script.
--
-- KEYS     the keys to forget (one hash slot on a cluster)
-- Returns  per key, 1 when it held state (now deleted), 0 when it held none.
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call('DEL', KEYS[i])
end
return out
