-- spillway: the tail of the all-or-nothing script: one request against several layers.
-- The loader puts every algorithm's script before it and defines decide_by_id, which maps an
-- algorithm's number (its position in include/spillway/algorithm_list.h) to its decide function.
--
-- KEYS[i]  the state of layer i; with a record (below), one more key last: the record's
-- ARGV     now (µs or ''), ttl_floor (ms), mode (0 decide, 1 reserve, 2 dry), record ('' none,
--          else the record's ttl in ms), then nine values per layer i:
--          algorithm number, limit, period, burst, limit_units, period_units, max_delay, reserved,
--          cost
--          (what this layer is charged: layers may count different things, e.g. requests and
--          tokens)
--          then, with a record: per layer its index in the reservation (1-based), then the
--          reservation's layers m and m triples (label, metered 0/1 or h for a hold, estimate), then the number
--          of other records k and k slots (a Redis Cluster's home record: see below).
-- Returns  six integers per layer: allowed (0/1), limit, remaining, retry_after, reset_after,
--          delay. Every layer is first
--          decided without writing; only if all admit are they decided again and written. When
--          any layer denies, nothing is written and the layers that would have admitted report
--          their state as it stands (a peek).
-- Reserve  (Redis Cluster: the layers of one request on several slots, one call per slot.) When
--          every layer of this call admits and reserve is 1, the reply goes on with, per layer,
--          the six integers of a peek before the charge (what to report if another slot
--          denies), then what undoes the charge (lua/refund.lua): the key's value before it
--          (DUMP, '' when absent), its expiry then (PEXPIRETIME, ms) and the value written (DUMP).
-- Dry      (mode 2: Redis Cluster, before reserving) nothing is written: when every layer would
--          admit, the reply is each layer's decision as it would be (a delay included), then
--          each layer's peek (its state as it stands, what to report if another slot denies);
--          otherwise as in mode 0.
-- Record   (usage-based limits, docs/SPEC.md §5.3) when every layer admits and was charged, the
--          record of the reservation is written in the same step (SET NX with the ttl): per key
--          its name, index, algorithm and limit, its estimate, its charge's mark (mark_<name>
--          after the charge), its max_delay, its reserved and (buckets) the mark's busy stretch
--          last, and the triples and slots given; cmsgpack keeps every number exact.
--          lua/settle.lua consumes it. A call with no layer writes a record only (the home
--          record of a reservation over several Cluster slots, written once they all charged).
local reserve, dry = ARGV[3] == '1', ARGV[3] == '2'
local record_ttl = ARGV[4]
local n = #KEYS
if record_ttl ~= '' then n = n - 1 end
local layers = {}
for i = 1, n do
  local a = 4 + (i - 1) * 9
  layers[i] = {decide_by_id[tonumber(ARGV[a + 1])], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
               tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]),
               tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9])}
end

local function run(i, c, commit)
  local l = layers[i]
  return l[1](KEYS[i], l[2], l[3], l[4], l[5], l[6], l[7], l[8], c, commit)
end

local function put(out, i, r)
  local o = #out
  out[o + 1] = r[1] and 1 or 0
  out[o + 2] = layers[i][2]
  out[o + 3] = r[2]
  out[o + 4] = r[3]
  out[o + 5] = r[4]
  out[o + 6] = r[5]
end

local results, all_admit = {}, true
for i = 1, n do
  results[i] = {run(i, layers[i][9], false)}
  if not results[i][1] then all_admit = false end
end
local undo = {}
if all_admit and reserve then
  for i = 1, n do
    undo[i] = {{run(i, 0, false)}, redis.call('DUMP', KEYS[i]) or '',
               redis.call('PEXPIRETIME', KEYS[i])}
  end
elseif all_admit and dry then
  for i = 1, n do undo[i] = {{run(i, 0, false)}} end  -- the peeks only
end
for i = 1, n do
  if all_admit and not dry then
    results[i] = {run(i, layers[i][9], true)}
  elseif results[i][1] and not all_admit then
    results[i] = {run(i, 0, false)}
  end
end

if all_admit and not dry and record_ttl ~= '' then
  local record = {keys = {}, layers = {}, slots = {}}
  for i = 1, n do
    local l, algorithm = layers[i], tonumber(ARGV[5 + (i - 1) * 9])
    local at, debt, since = mark_by_id[algorithm](KEYS[i], l[2], l[3], l[4], l[5], l[6])
    record.keys[i] = {KEYS[i], tonumber(ARGV[4 + 9 * n + i]), algorithm, l[2], l[3], l[4], l[5],
                      l[6], l[9], at, debt, l[7], l[8], since}
  end
  local a = 5 + 10 * n  -- m, then the triples
  for j = 1, tonumber(ARGV[a]) do
    local t = a + 3 * (j - 1)
    -- label, metered, estimate, hold (a concurrency slot: every settlement gives it back)
    record.layers[j] = {ARGV[t + 1], ARGV[t + 2] == '1', tonumber(ARGV[t + 3]), ARGV[t + 2] == 'h'}
  end
  a = a + 1 + 3 * #record.layers  -- k, then the slots
  for j = 1, tonumber(ARGV[a]) do record.slots[j] = tonumber(ARGV[a + j]) end
  redis.call('SET', KEYS[n + 1], cmsgpack.pack(record), 'PX', record_ttl, 'NX')
end

local out = {}
for i = 1, n do put(out, i, results[i]) end
if all_admit and (reserve or dry) then
  for i = 1, n do put(out, i, undo[i][1]) end
end
if all_admit and reserve then
  for i = 1, n do
    local o = #out
    out[o + 1] = undo[i][2]
    out[o + 2] = undo[i][3]
    out[o + 3] = redis.call('DUMP', KEYS[i]) or ''
  end
end
return out
