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

  // What the request lacks, in units, and the refill time that gives it, in µs: what higher
  // priorities keep is not there for it. A cost above B is never admitted (kNever below): min()
  // keeps the product in range for it.
  const std::int64_t burst = limit.admit_capacity();
  const std::int64_t kept = limit.reserved() * per_token;
  const std::int64_t short_by = std::min(cost, burst) * per_token - (units - kept);
  const Micros wait = short_by > 0 ? ceil_div(short_by, per_micro) : 0;
  const Micros max_delay = cost > 0 ? limit.max_delay() : 0;  // a peek is never delayed

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost > burst) {
    d.retry_after = kNever;
  } else if (wait <= max_delay) {
    d.allowed = true;
    // Shaping (the bucket goes below empty): to proceed at at + wait, counted from `now`.
    if (wait > 0) d.delay = at + wait - now;
    if (cost > 0) {
      note_charge(state.since, state.low, state.last, at, capacity - units);
      units -= cost * per_token;
      state.units = units;
      state.last = at;
    }
  } else {
    d.retry_after = at + wait - max_delay - now;
  }
  d.remaining = std::max<std::int64_t>(0, (units - kept) / per_token);  // in debt: none
  d.reset_after = at + ceil_div(capacity - units, per_micro) - now;
  return d;
}

Micros idle_at(const TokenBucketState& state, const Limit& limit) {
  if (state.last == kNoTime) return 0;
  const std::int64_t capacity = limit.burst() * limit.period_units();
  return state.last + ceil_div(capacity - state.units, limit.limit_units());
}

ChargeMark mark(const TokenBucketState& state, const Limit& limit) {
  return {.at = state.last,
          .debt = limit.burst() * limit.period_units() - state.units,
          .since = state.since};
}

std::int64_t settle(TokenBucketState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark) {
  const std::int64_t per_token = limit.period_units();
  const std::int64_t per_micro = limit.limit_units();
  const std::int64_t capacity = limit.burst() * per_token;
  const bool active = state.last != kNoTime;
  Micros at = now;
  std::int64_t units = capacity;
  if (active) {
    at = std::max(now, state.last);
    const Micros elapsed = at - state.last;
    const std::int64_t missing = capacity - state.units;
    units = elapsed >= ceil_div(missing, per_micro) ? capacity : state.units + elapsed * per_micro;
  }
  // The shortfall now, as in GCRA's debt: (capacity - units) with the same scale.
  const std::int64_t debt = capacity - units;
  std::int64_t next = debt;
  if (delta > 0) {
    // As in gcra.cc: up to the debt bound past the delay queue.
    const std::int64_t bound = (1 + kDebtLimits) * capacity + limit.max_delay() * per_micro;
    const std::int64_t room = std::max<std::int64_t>(0, bound - debt);
    next += std::min(delta, room / per_token) * per_token;
    if (next == debt) return 0;
    note_charge(state.since, state.low, state.last, at, debt);
  } else {
    if (debt == 0) return 0;
    // As in gcra.cc: exactly when nothing touched the bucket since the mark, else no more than
    // the busy stretch allows.
    const bool untouched = state.last == mark.at && capacity - state.units == mark.debt;
    const std::int64_t wanted = std::min(-delta, debt / per_token + 1) * per_token;
    const std::int64_t give =
        untouched ? wanted : touched_room(state.since, state.low, mark, wanted);
    next = std::max<std::int64_t>(0, debt - give);
    if (next == debt) return 0;
    note_refund(state.low, debt - next);
  }
  state.units = capacity - next;
  state.last = at;
  return (next > debt ? next - debt : debt - next) / per_token;
}

}  // namespace spillway::core
