-- spillway: the head of every script. The loader (cmake/embed_lua.cmake) builds one script per
-- algorithm (prelude + batch.lua with the algorithm's block pasted into its loop) and the
-- all-or-nothing script (prelude + every algorithm's block, each wrapped in a function
-- decide_<name>, + all_or_nothing.lua).
--
-- KEYS[i]  the state of check i
-- ARGV     now (µs, or '' to use the server's TIME), ttl_floor (ms; 0 except in replay), then
--          per check i: limit, period (µs), burst, limit_units, period_units, max_delay (µs, 0
--          for none), reserved (capacity kept for higher priorities, 0 for none), cost (in the
--          single-algorithm scripts, one value, -1 - cost, when check i has check i-1's limit)
-- Returns  (single-algorithm scripts) one string: per check i, five little-endian doubles:
--          allowed (0/1), remaining, retry_after (µs), reset_after (µs), delay (µs); the caller
--          knows the limit. The all-or-nothing script replies with integers
--          (lua/all_or_nothing.lua).
-- The checks of one call are decided in order inside this one atomic script, each exactly as if
-- it had been sent alone.
--
-- Numbers are doubles. Every value stays below 2^53 in magnitude (the C++ Limit enforces the
-- bounds), so +, - and * are exact. A quotient is made exact in place, without a helper function
-- (a script's chunk runs on every call, so each function it defines is a new closure per call):
--   floor(a / b), b > 0:  local q = floor(a / b); if q * b > a then q = q - 1 end
--   ceil(a / b), b > 0:   local q = -floor(-a / b); if q * b < a then q = q + 1 end
-- Why one step is enough: the integer q* = floor(a / b) and q* + 1 are doubles, and rounding is
-- monotonic, so the rounded quotient lies in [q*, q* + 1] and its floor is q* or q* + 1; q * b
-- is then exact, or (above 2^53) still on the right side of a.
--
-- An algorithm's block (lua/<name>.lua) is statements, not a function, for the same reason: the
-- single-algorithm scripts are the hot path. The block reads the locals key, limit, period,
-- burst, limit_units, period_units, max_delay, reserved, cost and commit; it sets allowed
-- (boolean), remaining, retry_after and reset_after, and delay (µs, already 0) when it admits
-- after a wait;
-- it writes the key only when it admits cost > 0 and commit is true
-- (false: a dry run): it sets `state` (the packed value) and `idle_at` (µs), and lua/write.lua,
-- pasted after it, writes them with the TTL. The numbers may arrive as ARGV
-- strings: the block makes numbers of those it uses with `+ 0` (in Redis' Lua each conversion
-- costs ~0.1 µs, and `+ 0` costs less than tonumber()).
local floor, max, min = math.floor, math.max, math.min
local pack, unpack = struct.pack, struct.unpack

local NEVER = -1
local now = ARGV[1]
if now == '' then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
else
  now = now + 0
end
local ttl_floor = ARGV[2] + 0
