  -- sliding_log: mirrors src/core/sliding_log.cc. State: a sorted set, one member "at:cost" per
  -- distinct admission time (score = at), so members never collide and equal times merge.
  do
    -- limit: what this request may fill, less what higher priorities keep (reserved).
    local limit, period, cost = limit - reserved, period + 0, cost + 0
    local function int(x) return string.format('%.0f', x) end
    local function parse_entry(member)
      local a, c = string.match(member, '^(%d+):(%d+)$')
      return tonumber(a), tonumber(c)
    end

    local newest = redis.call('ZRANGE', key, -1, -1)
    local at = now
    local newest_at, newest_cost = nil, 0
    if newest[1] then
      newest_at, newest_cost = parse_entry(newest[1])
      at = max(now, newest_at)
    end

    -- Live entries: at - P < t <= at, oldest first.
    local live = redis.call('ZRANGEBYSCORE', key, '(' .. int(at - period), '+inf')
    local used = 0
    for _, member in ipairs(live) do
      local _, c = parse_entry(member)
      used = used + c
    end

    allowed, retry_after = false, 0
    if cost <= limit and used + cost <= limit then
      allowed = true
      if cost > 0 then
        if commit then
          redis.call('ZREMRANGEBYSCORE', key, '-inf', int(at - period))
          if newest_at == at then
            redis.call('ZREM', key, newest[1])
            redis.call('ZADD', key, int(at), int(at) .. ':' .. int(newest_cost + cost))
          else
            redis.call('ZADD', key, int(at), int(at) .. ':' .. int(cost))
          end
          idle_at = at + period  -- the sorted set is written: lua/write.lua sets its expiry
        end
        used = used + cost
        newest_at = at
      end
    elseif cost > limit then
      retry_after = NEVER
    else
      -- Admitted once enough of the oldest live entries have expired.
      local excess = used + cost - limit
      local i, t = 0, 0
      while excess > 0 do
        i = i + 1
        local c
        t, c = parse_entry(live[i])
        excess = excess - c
      end
      retry_after = t + period - now
    end
    reset_after = 0
    if used > 0 then reset_after = newest_at + period - now end
    remaining = max(0, limit - used)  -- a key in debt has none
  end
  -- @mark
  -- sliding_log's mark (src/core/sliding_log.cc, mark): the newest entry's time.
  do
    local newest = redis.call('ZRANGE', key, -1, -1)
    if newest[1] then mark_at = tonumber(string.match(newest[1], '^(%d+):')) end
  end
  -- @settle
  -- sliding_log's settle (src/core/sliding_log.cc, settle): debt is an entry at the state's time
  -- (up to two limits live: 1 + kDebtLimits); a refund takes from the charge's own entry while it
  -- is live.
  do
    local limit, period, delta = limit + 0, period + 0, delta + 0
    local function int(x) return string.format('%.0f', x) end
    local function parse_entry(member)
      local a, c = string.match(member, '^(%d+):(%d+)$')
      return tonumber(a), tonumber(c)
    end
    local newest = redis.call('ZRANGE', key, -1, -1)
    local at, newest_at, newest_cost = now, nil, 0
    if newest[1] then
      newest_at, newest_cost = parse_entry(newest[1])
      at = max(now, newest_at)
    end
    if delta > 0 then
      local used = 0
      for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. int(at - period), '+inf')) do
        local _, c = parse_entry(member)
        used = used + c
      end
      done = max(0, min(delta, 2 * limit - used))
      if done > 0 then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', int(at - period))
        if newest_at == at then
          redis.call('ZREM', key, newest[1])
          redis.call('ZADD', key, int(at), int(at) .. ':' .. int(newest_cost + done))
        else
          redis.call('ZADD', key, int(at), int(at) .. ':' .. int(done))
        end
        idle_at = at + period
      end
    elseif mark_at > at - period then
      local found = redis.call('ZRANGEBYSCORE', key, int(mark_at), int(mark_at))
      if found[1] then
        local _, c = parse_entry(found[1])
        done = min(-delta, c)
        redis.call('ZREM', key, found[1])
        if c > done then
          redis.call('ZADD', key, int(mark_at), int(mark_at) .. ':' .. int(c - done))
        end
        newest = redis.call('ZRANGE', key, -1, -1)
        if newest[1] then idle_at = parse_entry(newest[1]) + period end
      end
    end
  end
