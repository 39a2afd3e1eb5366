// Sliding window counter (docs/SPEC.md §2): counts of windows w and w-1; with r = now - w*P, admits
// iff prev*(P - r)/P + cur + c <= L. Evaluated exactly as prev*(P - r) + (cur + c)*P <= L*P.
#pragma once

#include <cstdint>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/charge_mark.h"

namespace spillway::core {

struct SlidingWindowState {
  Micros last = 0;            // time of the last admission; `current` counts window last / P
  std::int64_t previous = 0;  // count of the window before that one
  std::int64_t current = 0;   // previous == current == 0 means idle
};

SlidingWindowState state_of(
    AlgorithmTag<Algorithm::kSlidingWindow>);  // the memory store's table holds SlidingWindowStates

// Pure: modifies `state` only when it admits cost > 0. A `now` before the last admission is
// treated as the time of the last admission (the estimate is larger earlier in a window).
Decision decide(SlidingWindowState& state, const Limit& limit, Micros now, std::int64_t cost);

Micros idle_at(const SlidingWindowState& state, const Limit& limit);

// Usage-based limits (docs/SPEC.md §2.6). mark(): the mark of the charge decide() just made.
// settle(): `delta` > 0 adds delta to the current window's count without a check (debt: the count
// may pass the limit, by at most kDebtLimits limits); `delta` < 0 takes up to -delta units off the
// count of the marked charge's window while it still counts (current or previous window).
// Returns the units charged or given back (>= 0).
ChargeMark mark(const SlidingWindowState& state, const Limit& limit);
std::int64_t settle(SlidingWindowState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark);

}  // namespace spillway::core
