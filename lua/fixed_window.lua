-- fixed_window: mirrors src/core/fixed_window.cc. State: "window count".
local s = load_state()
local active = s ~= nil and s[2] > 0
local at = now
if active then at = math.max(now, s[1] * period) end
local window = fdiv(at, period)
local window_end = (window + 1) * period
local used = 0
if active and s[1] == window then used = s[2] end

local allowed, retry_after = false, 0
if cost <= limit and used + cost <= limit then
  allowed = true
  used = used + cost
  if cost > 0 then save_state({window, used}, window_end) end
elseif cost > limit then
  retry_after = NEVER
else
  retry_after = window_end - now
end
local reset_after = 0
if used > 0 then reset_after = window_end - now end
return reply(allowed, limit - used, retry_after, reset_after)
