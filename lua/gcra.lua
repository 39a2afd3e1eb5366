  -- gcra: mirrors src/core/gcra.cc. State: pack(tat_us, tat_rem, last, since, low),
  -- tat = tat_us + tat_rem / limit_units; since and low: the busy stretch
  -- (src/core/busy_stretch.h). A value written before them has only the first three: it reads as
  -- since = last, low = 0 (nothing given back after other charges until the key is next idle).
  do
    -- burst: what this request may fill, less what higher priorities keep (reserved).
    local burst, cost = burst - reserved, cost + 0
    local scale, interval = limit_units + 0, period_units + 0
    local tolerance, max_delay = burst * interval, max_delay + 0
    if cost == 0 then max_delay = 0 end  -- a peek is never delayed
    local v = redis.call('GET', key)

    local at, x_us, x_rem, last = now, now, 0, nil
    if v then
      local tat_us, tat_rem
      tat_us, tat_rem, last = unpack('<ddd', v)
      at = max(now, last)
      x_us = at
      if tat_us >= at then x_us, x_rem = tat_us, tat_rem end
    end
    local debt = (x_us - at) * scale + x_rem
    -- How much the request overshoots the tolerance, scaled, and that as a wait in µs from at.
    -- (min: a cost above B is never admitted, as in the C++.)
    local over = (debt - tolerance) + min(cost, burst) * interval
    local wait = 0
    if over > 0 then
      wait = -floor(-over / scale)
      if wait * scale < over then wait = wait + 1 end
    end

    allowed, retry_after = false, 0
    if cost > burst then
      retry_after = NEVER
    elseif wait <= max_delay then
      allowed = true
      if wait > 0 then delay = at + wait - now end  -- admitted now, to proceed later
      if cost > 0 then
        local since, low = 0, -1
        if commit then
          -- The busy stretch (src/core/busy_stretch.h, note_charge), from the debt found.
          if v then
            since, low = last, 0
            if #v >= 40 then since, low = unpack('<dd', v, 25) end
          end
          if debt <= 0 then
            since, low = at, -1
            if last == at then low = 0 end
          elseif low == -1 or debt < low then
            low = debt
          end
        end
        local rem = x_rem + cost * interval
        local carry = floor(rem / scale)
        if carry * scale > rem then carry = carry - 1 end
        x_us = x_us + carry
        x_rem = rem - carry * scale
        debt = debt + cost * interval
        if commit then
          state, idle_at = pack('<ddddd', x_us, x_rem, at, since, low), x_us  -- idle at tat,
          if x_rem > 0 then idle_at = x_us + 1 end                             -- rounded up
        end
      end
    else
      -- Admitted (after the longest delay) at the first t with (x - t) * scale <= over past now.
      retry_after = at + wait - max_delay - now
    end
    reset_after = x_us - now
    if x_rem > 0 then reset_after = reset_after + 1 end
    local room = tolerance - debt
    remaining = floor(room / interval)
    if remaining * interval > room then remaining = remaining - 1 end
    remaining = max(0, remaining)
  end
  -- @mark
  -- gcra's mark (src/core/gcra.cc, mark): the last admission, the debt (tat - last, scaled) and
  -- the busy stretch's start.
  do
    local v = redis.call('GET', key)
    if v then
      local tat_us, tat_rem, last = unpack('<ddd', v)
      mark_at, mark_debt = last, (tat_us - last) * (limit_units + 0) + tat_rem
      if #v >= 40 then mark_since = unpack('<d', v, 25) end
    end
  end
  -- @settle
  -- gcra's settle (src/core/gcra.cc, settle): debt moves tat on by delta*T, up to
  -- (1 + kDebtLimits)*B*T past now; a refund moves it back, never below now: exactly when nothing
  -- touched the key since the mark, else no more than the busy stretch allows.
  do
    local burst, delta, scale, interval = burst + 0, delta + 0, limit_units + 0, period_units + 0
    local tolerance = burst * interval
    local v = redis.call('GET', key)
    local tat_us, tat_rem, last, since, low = 0, 0, nil, 0, -1
    if v then
      tat_us, tat_rem, last = unpack('<ddd', v)
      since, low = last, 0
      if #v >= 40 then since, low = unpack('<dd', v, 25) end
    end
    local at = now
    if v then at = max(now, last) end
    local debt = 0
    if v and tat_us >= at then debt = (tat_us - at) * scale + tat_rem end
    local next, new_last = debt, last
    if delta > 0 then
      -- Up to the debt bound past the delay queue (a key may be past it already).
      local left = max(0, 2 * tolerance + (max_delay + 0) * scale - debt)
      local room = floor(left / interval)
      if room * interval > left then room = room - 1 end
      next, new_last = debt + min(delta, room) * interval, at
      if next ~= debt then  -- busy_stretch.h, note_charge
        if debt <= 0 then
          since, low = at, -1
          if last == at then low = 0 end
        elseif low == -1 or debt < low then
          low = debt
        end
      end
    elseif debt > 0 then
      local whole = floor(debt / interval)
      if whole * interval > debt then whole = whole - 1 end
      local give = min(-delta, whole + 1) * interval
      if not (last == mark_at and (tat_us - mark_at) * scale + tat_rem == mark_debt) then
        -- touched: busy_stretch.h, touched_room
        if mark_since ~= since or low == -1 then give = 0 else give = min(give, low) end
      end
      next = max(0, debt - give)
      if low ~= -1 then low = max(0, low - (debt - next)) end  -- busy_stretch.h, note_refund
    end
    if next ~= debt then
      local carry = floor(next / scale)
      if carry * scale > next then carry = carry - 1 end
      local rem = next - carry * scale
      state, idle_at = pack('<ddddd', at + carry, rem, new_last, since, low), at + carry
      if rem > 0 then idle_at = at + carry + 1 end
      local moved = next - debt
      if moved < 0 then moved = -moved end
      done = floor(moved / interval)
      if done * interval > moved then done = done - 1 end
    end
  end
