-- spillway: the tail of the settle script: settles a reservation's record (written by
-- lua/all_or_nothing.lua) exactly once, in one atomic step with the keys it settles. The loader
-- puts every algorithm's decide and settle functions before it (decide_by_id, settle_by_id).
--
-- KEYS[1]  the record. Its keys are read from it, not declared: they share its hash slot (the
--          writer put them there), so the script stays on one slot of a Redis Cluster; one call
--          instead of a read of the record and then a second call.
-- ARGV     now (µs or ''), ttl_floor (ms), then either
--            'home', cancel (0/1, or r: a release), cost ('' none), then pairs (layer label, cost):
--            the home record, which has the reservation's layers: resolves each layer's actual
--            cost (as
--            MemoryStore does: 0 for a hold and when cancelled; its pair's cost; `cost` when the
--            layer is metered or no layer is; else its estimate) and settles the record's own
--            keys;
--          or
--            'part', then the actual cost of each of the reservation's layers, in order: another
--            record of the same reservation on another slot (a Redis Cluster), after its home.
-- Returns  {status, text, m, m quadruples (label, estimate, actual, hold 0/1), k, k slots, then
--          per key of this record: its layer's index, the units settled (refunded or charged), and the five
--          integers of a peek after it (lua/all_or_nothing.lua's six without the delay)}.
--          status 0 settled; 1 no such record (never made, or expired); 2 already settled; 3 a
--          pair names no layer of the reservation (text: its label; nothing changed); 4 a release
--          of a reservation that holds no slot (nothing changed).
-- A settled record is replaced by 'settled' with the rest of its ttl, so that a second
-- settlement finds it (2) until the reservation would have expired.
--
-- Debt     (Operation::kCharge: usage reported after the work, no reservation) ARGV[3] 'debt':
--          KEYS[i] a key, ARGV[4..] nine values per key as lua/all_or_nothing.lua takes them
--          (the last is its cost; reserved is not read: a charge is not a check). Each key is
--          charged its cost without a check (settle_<name> with no mark: debt, bounded); the
--          reply is six integers per key as lua/all_or_nothing.lua's, a peek after it with
--          allowed 1 (charged) and no delay.
if ARGV[3] == 'debt' then
  local out = {}
  for i = 1, #KEYS do
    local a = 3 + (i - 1) * 9
    local algorithm, limit, period, burst = tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3],
                                            ARGV[a + 4]
    local limit_units, period_units, cost = ARGV[a + 5], ARGV[a + 6], ARGV[a + 9] + 0
    settle_by_id[algorithm](KEYS[i], limit, period, burst, limit_units, period_units, ARGV[a + 7],
                            cost, -1, 0)
    -- The peek after it as the request's priority sees the key (its reserved, §2.4).
    local _, remaining, retry_after, reset_after = decide_by_id[algorithm](
        KEYS[i], limit, period, burst, limit_units, period_units, 0, ARGV[a + 8], 0, false)
    local o = #out
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = 1, limit + 0, remaining,
                                                                 retry_after, reset_after
    out[o + 6] = 0
  end
  return out
end

local v = redis.call('GET', KEYS[1])
if not v then return {1, ''} end
if v == 'settled' then return {2, ''} end
local record = cmsgpack.unpack(v)

local actual = {}
if ARGV[3] == 'home' then
  local cancel, cost, any_metered, any_hold = ARGV[4] == '1', ARGV[5], false, false
  for _, l in ipairs(record.layers) do
    any_metered = any_metered or l[2]
    any_hold = any_hold or l[4]
  end
  if ARGV[4] == 'r' and not any_hold then return {4, ''} end
  for j, l in ipairs(record.layers) do
    actual[j] = l[3]
    if cancel then
      actual[j] = 0
    elseif cost ~= '' and (l[2] or not any_metered) then
      actual[j] = cost + 0
    end
  end
  for p = 6, #ARGV, 2 do
    local found = nil
    for j, l in ipairs(record.layers) do
      if not found and l[1] == ARGV[p] then found = j end
    end
    if not found then return {3, ARGV[p]} end
    if not cancel then actual[found] = ARGV[p + 1] + 0 end
  end
  -- A concurrency slot (record.layers[j][4]) is given back by every settlement: its release.
  for j, l in ipairs(record.layers) do
    if l[4] then actual[j] = 0 end
  end
else
  for j = 4, #ARGV do actual[j - 3] = ARGV[j] + 0 end
end
redis.call('SET', KEYS[1], 'settled', 'KEEPTTL')

local out = {0, '', #record.layers}
for j, l in ipairs(record.layers) do
  out[#out + 1] = l[1]
  out[#out + 1] = l[3]
  out[#out + 1] = actual[j]
  out[#out + 1] = l[4] and 1 or 0
end
out[#out + 1] = #record.slots
for _, slot in ipairs(record.slots) do out[#out + 1] = slot end
for _, k in ipairs(record.keys) do
  -- name, index, algorithm, limit, period, burst, limit_units, period_units, estimate, mark,
  -- max_delay, reserved (a record written before delays or priorities has none: 0), the mark's
  -- busy stretch (buckets; a record written before it has none: nothing given back after other
  -- charges)
  local name, index, algorithm = k[1], k[2], k[3]
  local done = settle_by_id[algorithm](name, k[4], k[5], k[6], k[7], k[8], k[12] or 0,
                                       actual[index] - k[9], k[10], k[11], k[14])
  local allowed, remaining, retry_after, reset_after =
      decide_by_id[algorithm](name, k[4], k[5], k[6], k[7], k[8], 0, k[13] or 0, 0, false)
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = index, done, allowed and 1 or 0, k[4]
  out[o + 5], out[o + 6], out[o + 7] = remaining, retry_after, reset_after
end
return out
