-- sliding_window: mirrors src/core/sliding_window.cc. State: pack(last, previous, current).
local function decide_sliding_window(key, limit, period, burst, limit_units, period_units, cost, commit)
  local v = redis.call('GET', key)
  local last, s_previous, s_current = 0, 0, 0
  if v then last, s_previous, s_current = unpack('<ddd', v) end
  local active = s_previous > 0 or s_current > 0
  local at = now
  if active then at = max(now, last) end
  local window = fdiv(at, period)
  local elapsed = at - window * period

  local previous, current = 0, 0
  if active then
    local state_window = fdiv(last, period)
    if state_window == window then
      previous, current = s_previous, s_current
    elseif state_window == window - 1 then
      previous = s_current
    end
  end

  -- The earliest time the cost fits when it does not fit now (first_fit in the C++).
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
    if cost > 0 and commit then
      save_state(key, pack('<ddd', at, previous, current), (window + 2) * period)
    end
  elseif cost > limit then
    retry_after = NEVER
  else
    retry_after = first_fit() - now
  end
  local remaining = max(0, limit - current - cdiv(previous * (period - elapsed), period))
  local reset_after = 0
  if current > 0 then
    reset_after = (window + 2) * period - now
  elseif previous > 0 then
    reset_after = (window + 1) * period - now
  end
  return allowed, remaining, retry_after, reset_after
end
