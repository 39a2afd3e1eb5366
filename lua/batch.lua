-- spillway: the body of every single-algorithm script: decides each check of the call in order.
-- The loader pastes the algorithm's block (lua/<name>.lua), then lua/write.lua, in place of the
-- marker line below.
-- A check's arguments are eight (limit, period, burst, limit_units, period_units, max_delay,
-- reserved, cost; limit is at least 1), or one, negative, when it has the same limit as the check
-- before it in the call: -1 - cost. A batch of one limit's checks sends that limit once.
local out = {}
local a = 3
local limit, period, burst, limit_units, period_units, max_delay, reserved
for i = 1, #KEYS do
  local key, commit = KEYS[i], true
  -- Strings, or numbers: the block makes numbers of those it uses.
  local cost = ARGV[a] + 0
  if cost < 0 then
    cost, a = -1 - cost, a + 1
  else
    limit, period, burst, limit_units = cost, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
    period_units, max_delay, reserved = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
    cost, a = ARGV[a + 7], a + 8
  end
  local allowed, remaining, retry_after, reset_after, state, idle_at
  local delay = 0
  -- @algorithm
  out[i] = pack('<ddddd', allowed and 1 or 0, remaining, retry_after, reset_after, delay)
end
if #out == 1 then return out[1] end
return table.concat(out)
