#include "src/core/token_bucket.h"

#include <algorithm>

#include "src/core/int_math.h"

namespace spillway::core {

Decision decide(TokenBucketState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t per_token = limit.period_units();  // units in one token
  const std::int64_t per_micro = limit.limit_units();   // units refilled per µs
  const std::int64_t capacity = limit.burst() * per_token;

  Micros at = now;
  std::int64_t units = capacity;
  if (state.last != kNoTime) {
    at = std::max(now, state.last);
    const Micros elapsed = at - state.last;
    const std::int64_t missing = capacity - state.units;
    units = elapsed >= ceil_div(missing, per_micro) ? capacity : state.units + elapsed * per_micro;
  }

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost > limit.burst()) {
    d.retry_after = kNever;
  } else if (units >= cost * per_token) {
    d.allowed = true;
    units -= cost * per_token;
    if (cost > 0) state = {.units = units, .last = at};
  } else {
    d.retry_after = at + ceil_div(cost * per_token - units, per_micro) - now;
  }
  d.remaining = units / per_token;
  d.reset_after = at + ceil_div(capacity - units, per_micro) - now;
  return d;
}

Micros idle_at(const TokenBucketState& state, const Limit& limit) {
  if (state.last == kNoTime) return 0;
  const std::int64_t capacity = limit.burst() * limit.period_units();
  return state.last + ceil_div(capacity - state.units, limit.limit_units());
}

}  // namespace spillway::core
