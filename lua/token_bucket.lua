  -- token_bucket: mirrors src/core/token_bucket.cc. State: pack(units, last), tokens in units.
  do
    local burst, cost, per_token, per_micro = burst + 0, cost + 0, period_units + 0, limit_units + 0
    local capacity = burst * per_token
    local v = redis.call('GET', key)

    local at, units = now, capacity
    if v then
      local s_units, last = unpack('<dd', v)
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

    allowed, retry_after = false, 0
    if cost > burst then
      retry_after = NEVER
    elseif units >= cost * per_token then
      allowed = true
      units = units - cost * per_token
    else
      local short = cost * per_token - units
      local wait = -floor(-short / per_micro)
      if wait * per_micro < short then wait = wait + 1 end
      retry_after = at + wait - now
    end
    local missing = capacity - units
    local full_in = -floor(-missing / per_micro)
    if full_in * per_micro < missing then full_in = full_in + 1 end
    reset_after = at + full_in - now
    if allowed and cost > 0 and commit then
      state, idle_at = pack('<dd', units, at), at + full_in
    end
    remaining = floor(units / per_token)
    if remaining * per_token > units then remaining = remaining - 1 end
  end
