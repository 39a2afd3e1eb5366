-- spillway: the tail of the all-or-nothing script: one request against several layers.
-- The loader puts every algorithm's script before it and defines decide_by_id, which maps an
-- algorithm's number (its position in include/spillway/algorithm_list.h) to its decide function.
--
-- KEYS[i]  the state of layer i
-- ARGV     now (µs or ''), ttl_floor (ms), cost, then six values per layer i: algorithm number,
--          limit, period, burst, limit_units, period_units
-- Returns  five integers per layer, as the single-algorithm scripts do. Every layer is first
--          decided without writing; only if all admit are they decided again and written. When
--          any layer denies, nothing is written and the layers that would have admitted report
--          their state as it stands (a peek).
local cost = tonumber(ARGV[3])
local layers = {}
for i = 1, #KEYS do
  local a = 3 + (i - 1) * 6
  layers[i] = {decide_by_id[tonumber(ARGV[a + 1])], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
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
