// Sliding window log (docs/SPEC.md §2): admitted (t_i, c_i) with now - P < t_i <= now; admits iff
// sum(c_i) + c <= L. Exact; costs O(entries) memory, at most L entries per key (equal timestamps
// are merged), so it suits small limits.
#pragma once

#include <cstdint>
#include <vector>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/charge_mark.h"

namespace spillway::core {

struct SlidingLogState {
  struct Entry {
    Micros at;          // t_i
    std::int64_t cost;  // c_i > 0
  };
  std::vector<Entry> entries;  // ascending by `at`, unique `at`; may hold expired entries
  std::int64_t total = 0;      // sum of all cost in `entries`
};

SlidingLogState state_of(
    AlgorithmTag<Algorithm::kSlidingLog>);  // the memory store's table holds SlidingLogStates

// Pure: modifies `state` only when it admits cost > 0 (it then also drops expired entries).
// A `now` before the newest entry is treated as the newest entry's time.
Decision decide(SlidingLogState& state, const Limit& limit, Micros now, std::int64_t cost);

Micros idle_at(const SlidingLogState& state, const Limit& limit);

// Usage-based limits (docs/SPEC.md §2.6). mark(): the mark of the charge decide() just made (its
// entry's time). settle(): `delta` > 0 adds an entry of delta without a check (debt: the live
// total may pass the limit, by at most kDebtLimits limits); `delta` < 0 takes up to -delta units
// off the marked entry while it is live. Returns the units charged or given back (>= 0).
ChargeMark mark(const SlidingLogState& state, const Limit& limit);
std::int64_t settle(SlidingLogState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark);

}  // namespace spillway::core
