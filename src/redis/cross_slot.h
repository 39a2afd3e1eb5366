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
#include <memory>
#include <string>
#include <vector>

#include "spillway/store.h"
#include "src/redis/script_target.h"

namespace spillway::redis {

// One layer: its Redis key, its slot, and the nine numbers the script takes (algorithm number,
// limit, period, burst, limit_units, period_units, max_delay, reserved, and the layer's cost,
// last).
struct SlotKey {
  std::string key;
  std::uint16_t slot;
  std::array<std::int64_t, 9> numbers;
};

// A reservation over several slots (usage-based limits, docs/SPEC.md §5.3): each slot's reserve
// call also writes that slot's part record (reservation_part_key, with the ttl and a second more,
// so that it outlives the home record), and once every slot charged, one more call writes the home
// record (lua/all_or_nothing.lua with no layer), which names the slots. A slot that denies, or a
// home record that could not be written, is refunded as above, and the refund deletes the slot's
// part record.
struct ReservationRecords {
  std::string prefix;    // the store's key prefix
  std::string id;        // the reservation's id
  std::string home_key;  // reservation_home_key(prefix, id), on home_slot
  std::uint16_t home_slot = 0;
  std::chrono::milliseconds ttl{0};  // the home record's
  // The reservation's layers: m, then m triples (label, metered "0"/"1", estimate).
  std::vector<std::string> layers;
};

// `done` runs once, on one of the target's threads. `now` is "" for the server's TIME.
// dry_run_first: before reserving, one dry call per slot (nothing written); when a slot would
// deny, that is the answer and nothing needs a refund. Cheaper when most requests are denied,
// one more round trip when they are admitted.
// Every call of the request (dry run, reservations, refunds) ends by `deadline`.
// `records`: a reservation's (nullptr for a check).
void check_all_across_slots(ScriptTarget& target, std::vector<SlotKey> keys, std::string now,
                            std::chrono::milliseconds ttl_floor, bool dry_run_first,
                            ScriptTarget::Deadline deadline, Store::AllCallback done,
                            std::shared_ptr<const ReservationRecords> records = nullptr);

}  // namespace spillway::redis
