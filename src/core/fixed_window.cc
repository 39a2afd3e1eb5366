#include "src/core/fixed_window.h"

#include <algorithm>

namespace spillway::core {

Decision decide(FixedWindowState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t cap = limit.admit_capacity();  // L less what higher priorities keep
  const Micros period = limit.period();
  const bool active = state.count > 0;
  const Micros at = active ? std::max(now, state.window * period) : now;
  const std::int64_t window = at / period;
  const Micros window_end = (window + 1) * period;
  std::int64_t used = (active && state.window == window) ? state.count : 0;

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost <= cap && used + cost <= cap) {
    d.allowed = true;
    used += cost;
    if (cost > 0) state = {.window = window, .count = used};
  } else {
    d.retry_after = cost > cap ? kNever : window_end - now;
  }
  d.remaining = std::max<std::int64_t>(0, cap - used);  // a key in debt has none
  d.reset_after = used > 0 ? window_end - now : 0;
  return d;
}

Micros idle_at(const FixedWindowState& state, const Limit& limit) {
  return state.count > 0 ? (state.window + 1) * limit.period() : 0;
}

ChargeMark mark(const FixedWindowState& state, const Limit& limit) {
  return {.at = state.window * limit.period()};
}

std::int64_t settle(FixedWindowState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark) {
  const Micros period = limit.period();
  const bool active = state.count > 0;
  const std::int64_t window = (active ? std::max(now, state.window * period) : now) / period;
  const std::int64_t used = (active && state.window == window) ? state.count : 0;
  if (delta > 0) {
    const std::int64_t charged = std::min(delta, (1 + kDebtLimits) * limit.limit() - used);
    if (charged > 0) state = {.window = window, .count = used + charged};
    return std::max<std::int64_t>(0, charged);
  }
  if (used == 0 || mark.at / period != window) return 0;  // the charge's window is over
  const std::int64_t back = std::min(-delta, used);
  state.count = used - back;
  return back;
}

}  // namespace spillway::core
