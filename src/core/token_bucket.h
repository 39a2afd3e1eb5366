// Token bucket (docs/SPEC.md §2): tokens tau <= B, refilled continuously at L per P, starting full;
// admits iff tau >= c.
//
// Tokens are counted exactly in "units": one token is period_units() units and the bucket gains
// limit_units() units per µs (see Limit). Capacity is B * period_units().
#pragma once

#include <cstdint>
#include <limits>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"

namespace spillway::core {

inline constexpr Micros kNoTime = std::numeric_limits<Micros>::min();

struct TokenBucketState {
  std::int64_t units = 0;  // tokens at `last`, in units
  Micros last = kNoTime;   // time of the last admission; kNoTime means idle (full)
};

TokenBucketState state_of(
    AlgorithmTag<Algorithm::kTokenBucket>);  // the memory store's table holds TokenBucketStates

Decision decide(TokenBucketState& state, const Limit& limit, Micros now, std::int64_t cost);

Micros idle_at(const TokenBucketState& state, const Limit& limit);

}  // namespace spillway::core
