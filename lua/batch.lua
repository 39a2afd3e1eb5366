-- spillway: the body of every single-algorithm script: decides each check of the call in order.
-- The loader pastes the algorithm's block (lua/<name>.lua), then lua/write.lua, in place of the
-- marker line below.
local out = {}
for i = 1, #KEYS do
  local a = 2 + (i - 1) * 6
  local key, commit = KEYS[i], true
  -- Strings: the block makes numbers of those it uses.
  local limit, period, burst = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local limit_units, period_units, cost = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local allowed, remaining, retry_after, reset_after, state, idle_at
  -- @algorithm
  out[i] = pack('<dddd', allowed and 1 or 0, remaining, retry_after, reset_after)
end
if #out == 1 then return out[1] end
return table.concat(out)
