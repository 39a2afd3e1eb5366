#include "src/core/gcra.h"

#include <algorithm>

#include "src/core/int_math.h"

namespace spillway::core {

// Scaled arithmetic: a time x is the pair (x_us, x_rem) = x_us + x_rem / limit_units µs, and
// T = period_units / limit_units µs, so c*T adds c*period_units to x_rem.
Decision decide(GcraState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t scale = limit.limit_units();
  const std::int64_t interval = limit.period_units();  // T, scaled
  const std::int64_t burst = limit.admit_capacity();   // B less what higher priorities keep
  const std::int64_t tolerance = burst * interval;     // B*T, scaled

  const bool active = state.last != kNoTime;
  const Micros at = active ? std::max(now, state.last) : now;
  // x = max(tat, now); tat < at exactly when tat_us < at, because tat_rem < scale.
  Micros x_us = at;
  std::int64_t x_rem = 0;
  if (active && state.tat_us >= at) {
    x_us = state.tat_us;
    x_rem = state.tat_rem;
  }
  // (x - now) scaled: in [0, B*T] for a key that never delayed, up to B*T + max_delay * scale
  // for one that did, up to (1 + kDebtLimits)*B*T + max_delay * scale after a charge without a
  // check.
  std::int64_t debt = (x_us - at) * scale + x_rem;
  // How much the request overshoots the tolerance, scaled, and that as a wait in µs from `at`:
  // it fits once that much time passed. (debt - tolerance first: every sum stays below 2^53.)
  // A cost above B is never admitted (kNever below): min() keeps the product in range for it.
  const std::int64_t over = (debt - tolerance) + std::min(cost, burst) * interval;
  const Micros wait = over > 0 ? ceil_div(over, scale) : 0;
  const Micros max_delay = cost > 0 ? limit.max_delay() : 0;  // a peek is never delayed

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost > burst) {
    d.retry_after = kNever;
  } else if (wait <= max_delay) {
    d.allowed = true;
    // Shaping: admitted now, to proceed at at + wait, counted from the caller's `now` as
    // retry_after is.
    if (wait > 0) d.delay = at + wait - now;
    if (cost > 0) {
      note_charge(state.since, state.low, state.last, at, debt);
      const std::int64_t rem = x_rem + cost * interval;
      x_us += rem / scale;
      x_rem = rem % scale;
      debt += cost * interval;
      state.tat_us = x_us;
      state.tat_rem = x_rem;
      state.last = at;
    }
  } else {
    // Admitted (after the longest delay) at the first t with (x - t) * scale <= over past now.
    d.retry_after = at + wait - max_delay - now;
  }
  d.remaining = std::max<std::int64_t>(0, (tolerance - debt) / interval);
  d.reset_after = x_us + (x_rem > 0 ? 1 : 0) - now;
  return d;
}

Micros idle_at(const GcraState& state, const Limit&) {
  if (state.last == kNoTime) return 0;
  return state.tat_us + (state.tat_rem > 0 ? 1 : 0);
}

ChargeMark mark(const GcraState& state, const Limit& limit) {
  return {.at = state.last,
          .debt = (state.tat_us - state.last) * limit.limit_units() + state.tat_rem,
          .since = state.since};
}

std::int64_t settle(GcraState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark) {
  const std::int64_t scale = limit.limit_units();
  const std::int64_t interval = limit.period_units();
  const std::int64_t tolerance = limit.burst() * interval;
  const bool active = state.last != kNoTime;
  const Micros at = active ? std::max(now, state.last) : now;
  // The debt now: (max(tat, at) - at), scaled.
  const std::int64_t debt =
      active && state.tat_us >= at ? (state.tat_us - at) * scale + state.tat_rem : 0;
  std::int64_t next = debt;
  Micros last = state.last;
  if (delta > 0) {
    // Up to the debt bound past the delay queue (a key that delayed may be past it already).
    const std::int64_t bound = (1 + kDebtLimits) * tolerance + limit.max_delay() * scale;
    const std::int64_t room = std::max<std::int64_t>(0, bound - debt);
    next += std::min(delta, room / interval) * interval;
    if (next == debt) return 0;
    note_charge(state.since, state.low, last, at, debt);
    last = at;
  } else {
    if (debt == 0) return 0;
    // Untouched since the mark: the key charged A from the start would hold max(tat - r*T, now)
    // exactly. Touched: no more than the busy stretch allows (src/core/busy_stretch.h).
    const bool untouched =
        state.last == mark.at && (state.tat_us - mark.at) * scale + state.tat_rem == mark.debt;
    const std::int64_t wanted = std::min(-delta, debt / interval + 1) * interval;
    const std::int64_t give =
        untouched ? wanted : touched_room(state.since, state.low, mark, wanted);
    next = std::max<std::int64_t>(0, debt - give);
    if (next == debt) return 0;
    note_refund(state.low, debt - next);
  }
  state.tat_us = at + next / scale;
  state.tat_rem = next % scale;
  state.last = last;
  return (next > debt ? next - debt : debt - next) / interval;
}

}  // namespace spillway::core
