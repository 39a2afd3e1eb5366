-- spillway: shared head of every algorithm script (the loader prepends it to each).
--
-- KEYS[1]  the key's state
-- ARGV     limit, period (µs), burst, limit_units, period_units, cost, now (µs, or '' to use
--          the server's TIME), ttl_floor (ms; 0 except in replay)
-- Returns  {allowed (0/1), limit, remaining, retry_after (µs), reset_after (µs)}
--
-- Numbers are doubles. Every value stays below 2^53 (the C++ Limit enforces the bounds), so
-- +, - and * are exact, and fdiv corrects the rounded quotient to the exact floor.
local function fdiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
  elseif r >= b then
    q = q + 1
  end
  return q
end
local function cdiv(a, b) return -fdiv(-a, b) end
local function int(x) return string.format('%.0f', x) end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local limit_units = tonumber(ARGV[4])
local period_units = tonumber(ARGV[5])
local cost = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
local ttl_floor = tonumber(ARGV[8])
if ARGV[7] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local NEVER = -1

-- The state string: numbers separated by spaces; nil when the key is absent (idle).
local function load_state()
  local v = redis.call('GET', key)
  if not v then return nil end
  local out = {}
  for field in string.gmatch(v, '%S+') do out[#out + 1] = tonumber(field) end
  return out
end

-- Writes the state with a TTL that ends when the key is idle again (ms, rounded up).
local function save_state(fields, idle_at)
  local ttl = math.max(cdiv(idle_at - now, 1000), ttl_floor)
  if ttl <= 0 then
    redis.call('DEL', key)
    return
  end
  local parts = {}
  for i, x in ipairs(fields) do parts[i] = int(x) end
  redis.call('SET', key, table.concat(parts, ' '), 'PX', int(ttl))
end

local function reply(allowed, remaining, retry_after, reset_after)
  return {allowed and 1 or 0, limit, remaining, retry_after, reset_after}
end
