// Token bucket (docs/SPEC.md §2): tokens tau <= B, refilled continuously at L per P, starting full;
// admits iff tau >= c. With a max_delay D (shaping, docs/SPEC.md §2.2), a request that the
// bucket would hold after a refill of w <= D is admitted too, taking its c tokens now (the bucket
// goes below empty: the queue of delayed requests), with Decision::delay = w.
//
// Tokens are counted exactly in "units": one token is period_units() units and the bucket gains
// limit_units() units per µs (see Limit). Capacity is B * period_units().
#pragma once

#include <cstdint>
#include <limits>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/busy_stretch.h"
#include "src/core/charge_mark.h"

namespace spillway::core {

inline constexpr Micros kNoTime = std::numeric_limits<Micros>::min();

struct TokenBucketState {
  std::int64_t units = 0;  // tokens at `last`, in units
  Micros last = kNoTime;   // time of the last admission; kNoTime means idle (full)
  // For refunds after other charges (src/core/busy_stretch.h): the start of the busy stretch
  // (µs) and the least shortfall (units) a charge found since.
  Micros since = 0;
  std::int64_t low = kNoLow;
};

TokenBucketState state_of(
    AlgorithmTag<Algorithm::kTokenBucket>);  // the memory store's table holds TokenBucketStates

Decision decide(TokenBucketState& state, const Limit& limit, Micros now, std::int64_t cost);

Micros idle_at(const TokenBucketState& state, const Limit& limit);

// Usage-based limits (docs/SPEC.md §2.6). mark(): the mark of the charge decide() just made: its
// time and the bucket's shortfall (capacity - tokens, in units) right after it. settle(): `delta`
// > 0 takes delta tokens without a check (debt: the bucket may go below empty, by at most
// kDebtLimits*B tokens); `delta` < 0 puts back up to -delta tokens, never above full: exactly
// that when nothing touched the bucket since the mark, else no more than
// src/core/busy_stretch.h allows (as gcra). Returns the whole tokens taken or put back.
ChargeMark mark(const TokenBucketState& state, const Limit& limit);
std::int64_t settle(TokenBucketState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark);

}  // namespace spillway::core
