-- token_bucket: mirrors src/core/token_bucket.cc. State: "units last" (tokens in units).
local s = load_state()
local per_token, per_micro = period_units, limit_units
local capacity = burst * per_token

local at, units = now, capacity
if s ~= nil then
  at = math.max(now, s[2])
  local elapsed = at - s[2]
  if elapsed >= cdiv(capacity - s[1], per_micro) then
    units = capacity
  else
    units = s[1] + elapsed * per_micro
  end
end

local allowed, retry_after = false, 0
if cost > burst then
  retry_after = NEVER
elseif units >= cost * per_token then
  allowed = true
  units = units - cost * per_token
  if cost > 0 then save_state({units, at}, at + cdiv(capacity - units, per_micro)) end
else
  retry_after = at + cdiv(cost * per_token - units, per_micro) - now
end
local reset_after = at + cdiv(capacity - units, per_micro) - now
return reply(allowed, fdiv(units, per_token), retry_after, reset_after)
