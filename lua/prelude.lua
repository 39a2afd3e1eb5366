-- spillway: the head of every script. The loader (cmake/embed_lua.cmake) builds one script per
-- algorithm (prelude + <algorithm> + batch.lua) and the all-or-nothing script (prelude + every
-- algorithm + all_or_nothing.lua).
--
-- KEYS[i]  the state of check i
-- ARGV     now (µs, or '' to use the server's TIME), ttl_floor (ms; 0 except in replay), then
--          six values per check i: limit, period (µs), burst, limit_units, period_units, cost
-- Returns  five integers per check i: allowed (0/1), limit, remaining, retry_after (µs),
--          reset_after (µs)
-- The checks of one call are decided in order inside this one atomic script, each exactly as if
-- it had been sent alone.
--
-- Numbers are doubles. Every value stays below 2^53 (the C++ Limit enforces the bounds), so
-- +, - and * are exact, and fdiv corrects the rounded quotient to the exact floor.
-- Each algorithm defines decide_<name>(key, limit, period, burst, limit_units, period_units,
-- cost, commit), returning allowed (boolean), remaining, retry_after, reset_after; it writes the
-- key only when it admits cost > 0 and commit is true (false: a dry run).
local floor, max = math.floor, math.max
local pack, unpack = struct.pack, struct.unpack

local function fdiv(a, b)
  local q = floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
  elseif r >= b then
    q = q + 1
  end
  return q
end
local function cdiv(a, b) return -fdiv(-a, b) end

local NEVER = -1
local now = tonumber(ARGV[1])
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local ttl_floor = tonumber(ARGV[2])

-- Milliseconds until idle_at, rounded up, at least ttl_floor.
local function ttl_until(idle_at) return max(cdiv(idle_at - now, 1000), ttl_floor) end

-- A state is a few numbers packed as little-endian doubles (exact for our integers < 2^53);
-- GET returns nil when the key is absent (idle). The write always carries a TTL that ends when
-- the key is idle again: never a key without one.
local function save_state(key, packed, idle_at)
  local ttl = ttl_until(idle_at)
  if ttl <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, packed, 'PX', ttl)
  end
end
