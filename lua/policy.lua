-- spillway: the tail of the policy script: one request against several layers, all-or-nothing.
--
-- KEYS[i]  the state of layer i
-- ARGV     now (µs or ''), ttl_floor (ms), cost, then six values per layer i: algorithm
--          (0 fixed_window, 1 sliding_log, 2 sliding_window, 3 token_bucket, 4 gcra), limit,
--          period, burst, limit_units, period_units
-- Returns  five integers per layer, as the single-algorithm scripts do. Every layer is first
--          decided without writing; only if all admit are they decided again and written. When
--          any layer denies, nothing is written and the layers that would have admitted report
--          their state as it stands (a peek).
local by_id = {[0] = decide_fixed_window, [1] = decide_sliding_log, [2] = decide_sliding_window,
               [3] = decide_token_bucket, [4] = decide_gcra}
local cost = tonumber(ARGV[3])
local layers = {}
for i = 1, #KEYS do
  local a = 3 + (i - 1) * 6
  layers[i] = {by_id[tonumber(ARGV[a + 1])], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
               tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])}
end

local function run(i, c, commit)
  local l = layers[i]
  return l[1](KEYS[i], l[2], l[3], l[4], l[5], l[6], c, commit)
end

local results, all_admit = {}, true
for i = 1, #KEYS do
  results[i] = {run(i, cost, false)}
  if not results[i][1] then all_admit = false end
end
for i = 1, #KEYS do
  if all_admit then
    results[i] = {run(i, cost, true)}
  elseif results[i][1] then
    results[i] = {run(i, 0, false)}
  end
end

local out = {}
for i = 1, #KEYS do
  local r, o = results[i], (i - 1) * 5
  out[o + 1] = r[1] and 1 or 0
  out[o + 2] = layers[i][2]
  out[o + 3] = r[2]
  out[o + 4] = r[3]
  out[o + 5] = r[4]
end
return out
