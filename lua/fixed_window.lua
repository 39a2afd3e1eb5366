  -- fixed_window: mirrors src/core/fixed_window.cc. State: pack(window, count).
  do
    local limit, period, cost = limit + 0, period + 0, cost + 0
    local v = redis.call('GET', key)
    local state_window, count = 0, 0
    if v then state_window, count = unpack('<dd', v) end
    local active = count > 0
    local at = now
    if active then at = max(now, state_window * period) end
    local window = floor(at / period)
    if window * period > at then window = window - 1 end
    local window_end = (window + 1) * period
    local used = 0
    if active and state_window == window then used = count end

    allowed, retry_after = false, 0
    if cost <= limit and used + cost <= limit then
      allowed = true
      used = used + cost
      if cost > 0 and commit then state, idle_at = pack('<dd', window, used), window_end end
    elseif cost > limit then
      retry_after = NEVER
    else
      retry_after = window_end - now
    end
    reset_after = 0
    if used > 0 then reset_after = window_end - now end
    remaining = limit - used
  end
