  -- gcra: mirrors src/core/gcra.cc. State: pack(tat_us, tat_rem, last),
  -- tat = tat_us + tat_rem / limit_units.
  do
    local burst, cost, scale, interval = burst + 0, cost + 0, limit_units + 0, period_units + 0
    local tolerance = burst * interval
    local v = redis.call('GET', key)

    local at, x_us, x_rem = now, now, 0
    if v then
      local tat_us, tat_rem, last = unpack('<ddd', v)
      at = max(now, last)
      x_us = at
      if tat_us >= at then x_us, x_rem = tat_us, tat_rem end
    end
    local debt = (x_us - at) * scale + x_rem

    allowed, retry_after = false, 0
    if cost > burst then
      retry_after = NEVER
    elseif debt + cost * interval <= tolerance then
      allowed = true
      if cost > 0 then
        local rem = x_rem + cost * interval
        local carry = floor(rem / scale)
        if carry * scale > rem then carry = carry - 1 end
        x_us = x_us + carry
        x_rem = rem - carry * scale
        debt = debt + cost * interval
        if commit then
          state, idle_at = pack('<ddd', x_us, x_rem, at), x_us  -- idle at tat, rounded up
          if x_rem > 0 then idle_at = x_us + 1 end
        end
      end
    else
      -- Admitted at the first t with (x - t) * scale <= (B - c) * T.
      local over = x_rem - (tolerance - cost * interval)
      local wait = -floor(-over / scale)
      if wait * scale < over then wait = wait + 1 end
      retry_after = x_us + wait - now
    end
    reset_after = x_us - now
    if x_rem > 0 then reset_after = reset_after + 1 end
    local room = tolerance - debt
    remaining = floor(room / interval)
    if remaining * interval > room then remaining = remaining - 1 end
    remaining = max(0, remaining)
  end
