-- gcra: mirrors src/core/gcra.cc. State: "tat_us tat_rem last", tat = tat_us + tat_rem/limit_units.
local s = load_state()
local scale, interval = limit_units, period_units
local tolerance = burst * interval

local at = now
if s ~= nil then at = math.max(now, s[3]) end
local x_us, x_rem = at, 0
if s ~= nil and s[1] >= at then x_us, x_rem = s[1], s[2] end
local debt = (x_us - at) * scale + x_rem

local allowed, retry_after = false, 0
if cost > burst then
  retry_after = NEVER
elseif debt + cost * interval <= tolerance then
  allowed = true
  if cost > 0 then
    local rem = x_rem + cost * interval
    x_us = x_us + fdiv(rem, scale)
    x_rem = rem - fdiv(rem, scale) * scale
    debt = debt + cost * interval
    local idle_at = x_us
    if x_rem > 0 then idle_at = x_us + 1 end
    save_state({x_us, x_rem, at}, idle_at)
  end
else
  retry_after = x_us + cdiv(x_rem - (tolerance - cost * interval), scale) - now
end
local reset_after = x_us - now
if x_rem > 0 then reset_after = reset_after + 1 end
return reply(allowed, math.max(0, fdiv(tolerance - debt, interval)), retry_after, reset_after)
