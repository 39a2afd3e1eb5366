-- sliding_log: mirrors src/core/sliding_log.cc. State: a sorted set, one member "at:cost" per
-- distinct admission time (score = at), so members never collide and equal times merge.
local function parse(member)
  local a, c = string.match(member, '^(%d+):(%d+)$')
  return tonumber(a), tonumber(c)
end

local newest = redis.call('ZRANGE', key, -1, -1)
local at = now
local newest_at, newest_cost = nil, 0
if newest[1] then
  newest_at, newest_cost = parse(newest[1])
  at = math.max(now, newest_at)
end

-- Live entries: at - P < t <= at, oldest first.
local live = redis.call('ZRANGEBYSCORE', key, '(' .. int(at - period), '+inf')
local used = 0
for _, member in ipairs(live) do
  local _, c = parse(member)
  used = used + c
end

local allowed, retry_after = false, 0
if cost <= limit and used + cost <= limit then
  allowed = true
  if cost > 0 then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', int(at - period))
    if newest_at == at then
      redis.call('ZREM', key, newest[1])
      redis.call('ZADD', key, int(at), int(at) .. ':' .. int(newest_cost + cost))
    else
      redis.call('ZADD', key, int(at), int(at) .. ':' .. int(cost))
    end
    used = used + cost
    local ttl = math.max(cdiv(at + period - now, 1000), ttl_floor)
    redis.call('PEXPIRE', key, int(ttl))
    newest_at = at
  end
elseif cost > limit then
  retry_after = NEVER
else
  -- Admitted once enough of the oldest live entries have expired.
  local excess = used + cost - limit
  local i = 0
  local t = 0
  while excess > 0 do
    i = i + 1
    local c
    t, c = parse(live[i])
    excess = excess - c
  end
  retry_after = t + period - now
end
local reset_after = 0
if used > 0 then reset_after = newest_at + period - now end
return reply(allowed, limit - used, retry_after, reset_after)
