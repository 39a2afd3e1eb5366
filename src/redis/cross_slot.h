// All-or-nothing over keys on several Redis Cluster hash slots (the layers of one request keyed
// by IP, API key and endpoint rarely share a slot, and one script may only touch one slot):
// reserve, then refund.
//
//  1. Reserve: one call of the all-or-nothing script per slot, all at once, each charging its
//     slot's keys only if all of them admit (reserve mode: it also returns a peek from before the
//     charge and what undoes it).
//  2. When every slot admitted, the request is admitted. When any denied (or failed), each slot
//     that charged gets one call of lua/refund.lua, which restores a key only if it still holds
//     exactly what the charge wrote, i.e. nothing else touched it since: its state is then as if
//     the request had never been charged. A key written in between keeps the charge, and so does
//     a refund lost to a timeout (refunds share the request's deadline): the limiter
//     under-admits by that cost until it resets.
//
// So it never over-admits. A concurrent request may see a reservation for the round trip until
// its refund (a transient under-admission). The slots that admitted report the peek taken before
// their charge, as check_all reports layers that would have admitted. The answer is given after
// the refunds have returned.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "spillway/store.h"
#include "src/redis/script_target.h"

namespace spillway::redis {

// One layer: its Redis key, its slot, and the seven numbers the script takes (algorithm number,
// limit, period, burst, limit_units, period_units, and the layer's cost).
struct SlotKey {
  std::string key;
  std::uint16_t slot;
  std::array<std::int64_t, 7> numbers;
};

// `done` runs once, on one of the target's threads. `now` is "" for the server's TIME.
// dry_run_first: before reserving, one dry call per slot (nothing written); when a slot would
// deny, that is the answer and nothing needs a refund. Cheaper when most requests are denied,
// one more round trip when they are admitted.
// Every call of the request (dry run, reservations, refunds) ends by `deadline`.
void check_all_across_slots(ScriptTarget& target, std::vector<SlotKey> keys, std::string now,
                            std::chrono::milliseconds ttl_floor, bool dry_run_first,
                            ScriptTarget::Deadline deadline, Store::AllCallback done);

}  // namespace spillway::redis
