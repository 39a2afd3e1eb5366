-- sliding_window: mirrors src/core/sliding_window.cc. State: "last previous current".
local s = load_state()
local active = s ~= nil and (s[2] > 0 or s[3] > 0)
local at = now
if active then at = math.max(now, s[1]) end
local window = fdiv(at, period)
local elapsed = at - window * period

local previous, current = 0, 0
if active then
  local state_window = fdiv(s[1], period)
  if state_window == window then
    previous, current = s[2], s[3]
  elseif state_window == window - 1 then
    previous = s[3]
  end
end

-- The earliest time the cost fits when it does not fit now (see first_fit in the C++).
local function first_fit()
  local room = limit - current - cost
  if room >= 0 and previous > 0 then
    local slack = fdiv(room * period, previous)
    if slack >= 1 then return window * period + period - slack end
  end
  local next = (window + 1) * period
  if current == 0 then return next end
  local next_slack = fdiv((limit - cost) * period, current)
  if next_slack >= period then return next end
  if next_slack >= 1 then return next + period - next_slack end
  return next + period
end

local allowed, retry_after = false, 0
if cost <= limit and previous * (period - elapsed) + (current + cost) * period <= limit * period then
  allowed = true
  current = current + cost
  if cost > 0 then save_state({at, previous, current}, (window + 2) * period) end
elseif cost > limit then
  retry_after = NEVER
else
  retry_after = first_fit() - now
end
local remaining = math.max(0, limit - current - cdiv(previous * (period - elapsed), period))
local reset_after = 0
if current > 0 then
  reset_after = (window + 2) * period - now
elseif previous > 0 then
  reset_after = (window + 1) * period - now
end
return reply(allowed, remaining, retry_after, reset_after)
