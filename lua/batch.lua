-- spillway: the tail of every single-algorithm script, which runs a batch of checks of that one
-- algorithm (the loader defines `decide` as its function): decides each check of the call in order.
local out = {}
for i = 1, #KEYS do
  local a = 2 + (i - 1) * 6
  local limit = tonumber(ARGV[a + 1])
  local allowed, remaining, retry_after, reset_after =
    decide(KEYS[i], limit, tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]),
           tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), true)
  local o = (i - 1) * 5
  out[o + 1] = allowed and 1 or 0
  out[o + 2] = limit
  out[o + 3] = remaining
  out[o + 4] = retry_after
  out[o + 5] = reset_after
end
return out
