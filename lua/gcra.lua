-- gcra: mirrors src/core/gcra.cc. State: pack(tat_us, tat_rem, last),
-- tat = tat_us + tat_rem / limit_units.
local function decide_gcra(key, limit, period, burst, limit_units, period_units, cost, commit)
  local scale, interval = limit_units, period_units
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

  local allowed, retry_after = false, 0
  if cost > burst then
    retry_after = NEVER
  elseif debt + cost * interval <= tolerance then
    allowed = true
    if cost > 0 then
      local rem = x_rem + cost * interval
      local carry = fdiv(rem, scale)
      x_us = x_us + carry
      x_rem = rem - carry * scale
      debt = debt + cost * interval
      local idle_at = x_us
      if x_rem > 0 then idle_at = x_us + 1 end
      if commit then save_state(key, pack('<ddd', x_us, x_rem, at), idle_at) end
    end
  else
    retry_after = x_us + cdiv(x_rem - (tolerance - cost * interval), scale) - now
  end
  local reset_after = x_us - now
  if x_rem > 0 then reset_after = reset_after + 1 end
  return allowed, max(0, fdiv(tolerance - debt, interval)), retry_after, reset_after
end
