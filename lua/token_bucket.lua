  -- token_bucket: mirrors src/core/token_bucket.cc. State: pack(units, last, since, low), tokens
  -- in units; since and low: the busy stretch (src/core/busy_stretch.h). A value written before
  -- them has only the first two: it reads as since = last, low = 0 (as in gcra.lua).
  do
    local burst, cost, per_token, per_micro = burst + 0, cost + 0, period_units + 0, limit_units + 0
    local capacity, max_delay = burst * per_token, max_delay + 0
    -- What higher priorities keep is not there for this request; burst: what it may fill.
    local kept = reserved * per_token
    burst = burst - reserved
    if cost == 0 then max_delay = 0 end  -- a peek is never delayed
    local v = redis.call('GET', key)

    local at, units, last = now, capacity, nil
    if v then
      local s_units
      s_units, last = unpack('<dd', v)
      at = max(now, last)
      local elapsed = at - last
      local missing = capacity - s_units  -- refilled after ceil(missing / per_micro) µs
      local refill = -floor(-missing / per_micro)
      if refill * per_micro < missing then refill = refill + 1 end
      if elapsed >= refill then
        units = capacity
      else
        units = s_units + elapsed * per_micro
      end
    end

    -- What the request lacks, in units, and the refill time that gives it, in µs.
    local short = min(cost, burst) * per_token - (units - kept)  -- (min: as gcra's)
    local wait = 0
    if short > 0 then
      wait = -floor(-short / per_micro)
      if wait * per_micro < short then wait = wait + 1 end
    end

    allowed, retry_after = false, 0
    local found = 0  -- the shortfall this charge found (src/core/busy_stretch.h)
    if cost > burst then
      retry_after = NEVER
    elseif wait <= max_delay then
      allowed = true
      if wait > 0 then delay = at + wait - now end  -- the bucket goes below empty
      found = capacity - units
      units = units - cost * per_token
    else
      retry_after = at + wait - max_delay - now
    end
    local missing = capacity - units
    local full_in = -floor(-missing / per_micro)
    if full_in * per_micro < missing then full_in = full_in + 1 end
    reset_after = at + full_in - now
    if allowed and cost > 0 and commit then
      -- The busy stretch (src/core/busy_stretch.h, note_charge), from the shortfall found.
      local since, low = 0, -1
      if v then
        since, low = last, 0
        if #v >= 32 then since, low = unpack('<dd', v, 17) end
      end
      if found <= 0 then
        since, low = at, -1
        if last == at then low = 0 end
      elseif low == -1 or found < low then
        low = found
      end
      state, idle_at = pack('<dddd', units, at, since, low), at + full_in
    end
    remaining = floor((units - kept) / per_token)
    if remaining * per_token > units - kept then remaining = remaining - 1 end
    remaining = max(0, remaining)  -- a key in debt has none
  end
  -- @mark
  -- token_bucket's mark (src/core/token_bucket.cc, mark): the last update, the shortfall and the
  -- busy stretch's start.
  do
    local v = redis.call('GET', key)
    if v then
      local s_units, last = unpack('<dd', v)
      mark_at, mark_debt = last, (burst + 0) * (period_units + 0) - s_units
      if #v >= 32 then mark_since = unpack('<d', v, 17) end
    end
  end
  -- @settle
  -- token_bucket's settle (src/core/token_bucket.cc, settle): as gcra's, in units: debt up to
  -- (1 + kDebtLimits) buckets short; a refund exactly into a bucket untouched since the mark, else
  -- no more than the busy stretch allows.
  do
    local burst, delta, per_token, per_micro = burst + 0, delta + 0, period_units + 0, limit_units + 0
    local capacity = burst * per_token
    local v = redis.call('GET', key)
    local at, units, s_units, last, since, low = now, capacity, 0, nil, 0, -1
    if v then
      s_units, last = unpack('<dd', v)
      since, low = last, 0
      if #v >= 32 then since, low = unpack('<dd', v, 17) end
      at = max(now, last)
      local missing = capacity - s_units
      local refill = -floor(-missing / per_micro)
      if refill * per_micro < missing then refill = refill + 1 end
      if at - last >= refill then
        units = capacity
      else
        units = s_units + (at - last) * per_micro
      end
    end
    local debt = capacity - units
    local next = debt
    if delta > 0 then
      -- As gcra's: up to the debt bound past the delay queue.
      local left = max(0, 2 * capacity + (max_delay + 0) * per_micro - debt)
      local room = floor(left / per_token)
      if room * per_token > left then room = room - 1 end
      next = debt + min(delta, room) * per_token
      if next ~= debt then  -- busy_stretch.h, note_charge
        if debt <= 0 then
          since, low = at, -1
          if last == at then low = 0 end
        elseif low == -1 or debt < low then
          low = debt
        end
      end
    elseif debt > 0 then
      local whole = floor(debt / per_token)
      if whole * per_token > debt then whole = whole - 1 end
      local give = min(-delta, whole + 1) * per_token
      if not (last == mark_at and capacity - s_units == mark_debt) then
        -- touched: busy_stretch.h, touched_room
        if mark_since ~= since or low == -1 then give = 0 else give = min(give, low) end
      end
      next = max(0, debt - give)
      if low ~= -1 then low = max(0, low - (debt - next)) end  -- busy_stretch.h, note_refund
    end
    if next ~= debt then
      local full_in = -floor(-next / per_micro)
      if full_in * per_micro < next then full_in = full_in + 1 end
      state, idle_at = pack('<dddd', capacity - next, at, since, low), at + full_in
      local moved = next - debt
      if moved < 0 then moved = -moved end
      done = floor(moved / per_token)
      if done * per_token > moved then done = done - 1 end
    end
  end
