  -- fixed_window: mirrors src/core/fixed_window.cc. State: pack(window, count).
  do
    -- limit: what this request may fill, less what higher priorities keep (reserved).
    local limit, period, cost = limit - reserved, period + 0, cost + 0
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
    remaining = max(0, limit - used)  -- a key in debt has none
  end
  -- @mark
  -- fixed_window's mark (src/core/fixed_window.cc, mark): the start of the charge's window.
  do
    local v = redis.call('GET', key)
    if v then
      local state_window = unpack('<dd', v)
      mark_at = state_window * (period + 0)
    end
  end
  -- @settle
  -- fixed_window's settle (src/core/fixed_window.cc, settle): debt up to two limits used in the
  -- window (1 + kDebtLimits); a refund only while the charge's window is the current one.
  do
    local limit, period, delta = limit + 0, period + 0, delta + 0
    local v = redis.call('GET', key)
    local state_window, count = 0, 0
    if v then state_window, count = unpack('<dd', v) end
    local active = count > 0
    local at = now
    if active then at = max(now, state_window * period) end
    local window = floor(at / period)
    if window * period > at then window = window - 1 end
    local used = 0
    if active and state_window == window then used = count end
    local left = used
    if delta > 0 then
      done = max(0, min(delta, 2 * limit - used))
      left = used + done
    elseif used > 0 then
      local mark_window = floor(mark_at / period)
      if mark_window * period > mark_at then mark_window = mark_window - 1 end
      if mark_window == window then
        done = min(-delta, used)
        left = used - done
      end
    end
    if done > 0 then
      state, idle_at = pack('<dd', window, left), (window + 1) * period
      if left == 0 then idle_at = 0 end
    end
  end
