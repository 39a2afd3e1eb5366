// An open reservation as the memory store keeps it (MemoryStore, spillway/memory_store.h;
// usage-based limits, docs/SPEC.md §5.3): each key's limit, estimate (units charged when it was
// made), charge mark and layer label, and its expiry (Micros); and the actual cost a settlement
// gives each key (actual_costs). Plain values and a pure function: the store guards a record
// with its reservation shard's lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/duration.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "spillway/store.h"
#include "src/core/charge_mark.h"

namespace spillway::memory {

// An open reservation: what each of its keys was charged, and how to settle it.
struct Reservation {
  struct Key {
    std::string key;
    Limit limit;
    std::int64_t estimate;
    core::ChargeMark mark;
    std::string label;
    bool metered;
    bool hold;  // a concurrency slot: every settlement gives it back
  };
  std::vector<Key> keys;
  Micros expires_at = 0;
  std::multimap<Micros, std::string_view>::iterator expiry;  // its entry in by_expiry
};

// Each key's actual cost under `settlement` (Store's Settlement says how), in `kept.keys`' order.
// Errors: kInvalidArgument when a named cost's label is no layer of the reservation, or a release
// finds no hold.
Result<void> actual_costs(const Reservation& kept, const Settlement& settlement,
                          std::vector<std::int64_t>& actual);

}  // namespace spillway::memory
