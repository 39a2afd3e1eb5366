-- token_bucket: mirrors src/core/token_bucket.cc. State: pack(units, last), tokens in units.
local function decide_token_bucket(key, limit, period, burst, limit_units, period_units, cost, commit)
  local per_token, per_micro = period_units, limit_units
  local capacity = burst * per_token
  local v = redis.call('GET', key)

  local at, units = now, capacity
  if v then
    local s_units, last = unpack('<dd', v)
    at = max(now, last)
    local elapsed = at - last
    if elapsed >= cdiv(capacity - s_units, per_micro) then
      units = capacity
    else
      units = s_units + elapsed * per_micro
    end
  end

  local allowed, retry_after = false, 0
  if cost > burst then
    retry_after = NEVER
  elseif units >= cost * per_token then
    allowed = true
    units = units - cost * per_token
    if cost > 0 and commit then
      save_state(key, pack('<dd', units, at), at + cdiv(capacity - units, per_micro))
    end
  else
    retry_after = at + cdiv(cost * per_token - units, per_micro) - now
  end
  local reset_after = at + cdiv(capacity - units, per_micro) - now
  return allowed, fdiv(units, per_token), retry_after, reset_after
end
