  -- sliding_window: mirrors src/core/sliding_window.cc. State: pack(last, previous, current).
  do
    -- limit: what this request may fill, less what higher priorities keep (reserved).
    local limit, period, cost = limit - reserved, period + 0, cost + 0
    local v = redis.call('GET', key)
    local last, s_previous, s_current = 0, 0, 0
    if v then last, s_previous, s_current = unpack('<ddd', v) end
    local active = s_previous > 0 or s_current > 0
    local at = now
    if active then at = max(now, last) end
    local window = floor(at / period)
    if window * period > at then window = window - 1 end
    local elapsed = at - window * period

    local previous, current = 0, 0
    if active then
      local state_window = floor(last / period)
      if state_window * period > last then state_window = state_window - 1 end
      if state_window == window then
        previous, current = s_previous, s_current
      elseif state_window == window - 1 then
        previous = s_current
      end
    end

    allowed, retry_after = false, 0
    if cost <= limit and
        previous * (period - elapsed) + (current + cost) * period <= limit * period then
      allowed = true
      current = current + cost
      if cost > 0 and commit then
        state, idle_at = pack('<ddd', at, previous, current), (window + 2) * period
      end
    elseif cost > limit then
      retry_after = NEVER
    else
      -- The earliest time the cost fits (first_fit in the C++); a denial, so off the hot path.
      local function floor_div(a, b)
        local q = floor(a / b)
        if q * b > a then q = q - 1 end
        return q
      end
      local function first_fit()
        local room = limit - current - cost
        if room >= 0 and previous > 0 then
          local slack = floor_div(room * period, previous)
          if slack >= 1 then return window * period + period - slack end
        end
        local next = (window + 1) * period
        if current == 0 then return next end
        local next_slack = floor_div((limit - cost) * period, current)
        if next_slack >= period then return next end
        if next_slack >= 1 then return next + period - next_slack end
        return next + period
      end
      retry_after = first_fit() - now
    end
    local weighted = previous * (period - elapsed)  -- previous window's share, ceil(/ period)
    local share = -floor(-weighted / period)
    if share * period < weighted then share = share + 1 end
    remaining = max(0, limit - current - share)
    reset_after = 0
    if current > 0 then
      reset_after = (window + 2) * period - now
    elseif previous > 0 then
      reset_after = (window + 1) * period - now
    end
  end
  -- @mark
  -- sliding_window's mark (src/core/sliding_window.cc, mark): the state's time after the charge.
  do
    local v = redis.call('GET', key)
    if v then mark_at = unpack('<ddd', v) end
  end
  -- @settle
  -- sliding_window's settle (src/core/sliding_window.cc, settle): debt into the current window
  -- up to two limits (1 + kDebtLimits); a refund from the window the charge went into, while it
  -- is the current or the previous one.
  do
    local limit, period, delta = limit + 0, period + 0, delta + 0
    local v = redis.call('GET', key)
    local last, s_previous, s_current = 0, 0, 0
    if v then last, s_previous, s_current = unpack('<ddd', v) end
    local active = s_previous > 0 or s_current > 0
    local at = now
    if active then at = max(now, last) end
    local window = floor(at / period)
    if window * period > at then window = window - 1 end
    local previous, current = 0, 0
    if active then
      local state_window = floor(last / period)
      if state_window * period > last then state_window = state_window - 1 end
      if state_window == window then
        previous, current = s_previous, s_current
      elseif state_window == window - 1 then
        previous = s_current
      end
    end
    local mark_window = floor(mark_at / period)
    if mark_window * period > mark_at then mark_window = mark_window - 1 end
    if delta > 0 then
      done = max(0, min(delta, 2 * limit - current))
      current = current + done
    elseif mark_window == window then
      done = min(-delta, current)
      current = current - done
    elseif mark_window == window - 1 then
      done = min(-delta, previous)
      previous = previous - done
    end
    if done > 0 then
      state, idle_at = pack('<ddd', at, previous, current), 0
      if current > 0 then
        idle_at = (window + 2) * period
      elseif previous > 0 then
        idle_at = (window + 1) * period
      end
    end
  end
