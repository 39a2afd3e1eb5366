#include "src/core/sliding_window.h"

#include <algorithm>

#include "src/core/int_math.h"

namespace spillway::core {
namespace {

// The earliest time at which `cost` fits, given the counts of window w, when it does not fit now.
// Inside window w it fits once previous*(P - r) <= (L - current - cost)*P; failing that, in
// window w+1 (previous = current, current = 0), or at the latest at the start of window w+2.
Micros first_fit(std::int64_t previous, std::int64_t current, std::int64_t window,
                 const Limit& limit, std::int64_t cost) {
  const std::int64_t cap = limit.admit_capacity();
  const Micros period = limit.period();
  const std::int64_t room = cap - current - cost;
  if (room >= 0 && previous > 0) {
    const std::int64_t slack = room * period / previous;  // largest P - r that fits
    if (slack >= 1) return window * period + period - slack;
  }
  const Micros next = (window + 1) * period;
  if (current == 0) return next;
  const std::int64_t next_slack = (cap - cost) * period / current;
  if (next_slack >= period) return next;
  if (next_slack >= 1) return next + period - next_slack;
  return next + period;
}

// The key's counts as they stand at `now`: the time it is decided at (never before its last
// admission), that time's window w, and the counts of windows w-1 and w.
struct Counts {
  Micros at;
  std::int64_t window;
  std::int64_t previous;
  std::int64_t current;
};
Counts counts_at(const SlidingWindowState& state, const Limit& limit, Micros now) {
  const Micros period = limit.period();
  const bool active = state.previous > 0 || state.current > 0;
  const Micros at = active ? std::max(now, state.last) : now;
  Counts counts{.at = at, .window = at / period, .previous = 0, .current = 0};
  const std::int64_t state_window = state.last / period;
  if (active && state_window == counts.window) {
    counts.previous = state.previous;
    counts.current = state.current;
  } else if (active && state_window == counts.window - 1) {
    counts.previous = state.current;
  }
  return counts;
}

}  // namespace

Decision decide(SlidingWindowState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t cap = limit.admit_capacity();  // L less what higher priorities keep
  const Micros period = limit.period();
  const auto [at, window, previous, current_before] = counts_at(state, limit, now);
  std::int64_t current = current_before;
  const Micros elapsed = at - window * period;  // r

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost <= cap && previous * (period - elapsed) + (current + cost) * period <= cap * period) {
    d.allowed = true;
    current += cost;
    if (cost > 0) state = {.last = at, .previous = previous, .current = current};
  } else {
    d.retry_after = cost > cap ? kNever : first_fit(previous, current, window, limit, cost) - now;
  }
  d.remaining =
      std::max<std::int64_t>(0, cap - current - ceil_div(previous * (period - elapsed), period));
  if (current > 0) {
    d.reset_after = (window + 2) * period - now;
  } else if (previous > 0) {
    d.reset_after = (window + 1) * period - now;
  }
  return d;
}

Micros idle_at(const SlidingWindowState& state, const Limit& limit) {
  const std::int64_t window = state.last / limit.period();
  if (state.current > 0) return (window + 2) * limit.period();
  if (state.previous > 0) return (window + 1) * limit.period();
  return 0;
}

ChargeMark mark(const SlidingWindowState& state, const Limit&) { return {.at = state.last}; }

std::int64_t settle(SlidingWindowState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark) {
  const Micros period = limit.period();
  const auto [at, window, previous_now, current_now] = counts_at(state, limit, now);
  std::int64_t previous = previous_now;
  std::int64_t current = current_now;
  std::int64_t done = 0;
  if (delta > 0) {
    done = std::max<std::int64_t>(0, std::min(delta, (1 + kDebtLimits) * limit.limit() - current));
    current += done;
  } else if (mark.at / period == window) {
    done = std::min(-delta, current);
    current -= done;
  } else if (mark.at / period == window - 1) {
    done = std::min(-delta, previous);
    previous -= done;
  }
  if (done > 0) state = {.last = at, .previous = previous, .current = current};
  return done;
}

}  // namespace spillway::core
