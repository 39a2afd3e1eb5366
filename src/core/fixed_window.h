// Fixed window counter (docs/SPEC.md §2): count n of window w = floor(now / P); admits iff n + c <=
// L. Admits up to 2L within one period across a window edge: that is its nature, not a bug.
#pragma once

#include <cstdint>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/charge_mark.h"

namespace spillway::core {

struct FixedWindowState {
  std::int64_t window = 0;  // w of the counted window
  std::int64_t count = 0;   // n, cost units admitted in window w; 0 means idle
};

FixedWindowState state_of(
    AlgorithmTag<Algorithm::kFixedWindow>);  // the memory store's table holds FixedWindowStates

// Pure: decides from (state, limit, now µs, cost); modifies `state` only when it admits cost > 0.
// A `now` before the start of the key's window is treated as that start.
Decision decide(FixedWindowState& state, const Limit& limit, Micros now, std::int64_t cost);

// When the key is back to idle (µs, absolute).
Micros idle_at(const FixedWindowState& state, const Limit& limit);

// Usage-based limits (docs/SPEC.md §2.6). mark(): the mark of the charge decide() just made.
// settle(): `delta` > 0 charges delta more without a check (debt: the count may pass the limit,
// by at most kDebtLimits limits); `delta` < 0 gives back up to -delta units of the marked charge,
// only while its window is the key's window. Returns the units charged or given back (>= 0).
ChargeMark mark(const FixedWindowState& state, const Limit& limit);
std::int64_t settle(FixedWindowState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark);

}  // namespace spillway::core
