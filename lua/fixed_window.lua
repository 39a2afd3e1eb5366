-- fixed_window: mirrors src/core/fixed_window.cc. State: pack(window, count).
local function decide_fixed_window(key, limit, period, burst, limit_units, period_units, cost, commit)
  local v = redis.call('GET', key)
  local state_window, count = 0, 0
  if v then state_window, count = unpack('<dd', v) end
  local active = count > 0
  local at = now
  if active then at = max(now, state_window * period) end
  local window = fdiv(at, period)
  local window_end = (window + 1) * period
  local used = 0
  if active and state_window == window then used = count end

  local allowed, retry_after = false, 0
  if cost <= limit and used + cost <= limit then
    allowed = true
    used = used + cost
    if cost > 0 and commit then save_state(key, pack('<dd', window, used), window_end) end
  elseif cost > limit then
    retry_after = NEVER
  else
    retry_after = window_end - now
  end
  local reset_after = 0
  if used > 0 then reset_after = window_end - now end
  return allowed, limit - used, retry_after, reset_after
end
