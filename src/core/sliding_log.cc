#include "src/core/sliding_log.h"

#include <algorithm>

namespace spillway::core {

Decision decide(SlidingLogState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t cap = limit.limit();
  const Micros period = limit.period();
  auto& entries = state.entries;
  const Micros at = entries.empty() ? now : std::max(now, entries.back().at);

  // Entries at or before at - P have left the window.
  std::size_t first_live = 0;
  std::int64_t expired = 0;
  while (first_live < entries.size() && entries[first_live].at <= at - period) {
    expired += entries[first_live++].cost;
  }
  std::int64_t used = state.total - expired;

  Decision d{.allowed = false, .limit = cap};
  if (cost <= cap && used + cost <= cap) {
    d.allowed = true;
    if (cost > 0) {
      entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(first_live));
      if (!entries.empty() && entries.back().at == at) {
        entries.back().cost += cost;
      } else {
        entries.push_back({.at = at, .cost = cost});
      }
      state.total = used + cost;
      used += cost;
    }
  } else if (cost > cap) {
    d.retry_after = kNever;
  } else {
    // Admitted once enough of the oldest live entries have expired.
    std::int64_t excess = used + cost - cap;
    std::size_t i = first_live;
    while (excess > 0) excess -= entries[i++].cost;
    d.retry_after = entries[i - 1].at + period - now;
  }
  d.remaining = std::max<std::int64_t>(0, cap - used);  // a key in debt has none
  d.reset_after = used > 0 ? entries.back().at + period - now : 0;
  return d;
}

Micros idle_at(const SlidingLogState& state, const Limit& limit) {
  return state.entries.empty() ? 0 : state.entries.back().at + limit.period();
}

ChargeMark mark(const SlidingLogState& state, const Limit&) {
  return {.at = state.entries.empty() ? 0 : state.entries.back().at};
}

std::int64_t settle(SlidingLogState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark) {
  auto& entries = state.entries;
  const Micros at = entries.empty() ? now : std::max(now, entries.back().at);
  std::size_t first_live = 0;
  std::int64_t expired = 0;
  while (first_live < entries.size() && entries[first_live].at <= at - limit.period()) {
    expired += entries[first_live++].cost;
  }
  const std::int64_t used = state.total - expired;
  if (delta > 0) {
    const std::int64_t charged = std::min(delta, (1 + kDebtLimits) * limit.limit() - used);
    if (charged <= 0) return 0;
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(first_live));
    if (!entries.empty() && entries.back().at == at) {
      entries.back().cost += charged;
    } else {
      entries.push_back({.at = at, .cost = charged});
    }
    state.total = used + charged;
    return charged;
  }
  const auto live = entries.begin() + static_cast<std::ptrdiff_t>(first_live);
  const auto entry =
      std::lower_bound(live, entries.end(), mark.at,
                       [](const SlidingLogState::Entry& e, Micros t) { return e.at < t; });
  if (entry == entries.end() || entry->at != mark.at) return 0;  // expired: nothing to give back
  const std::int64_t back = std::min(-delta, entry->cost);
  entry->cost -= back;
  state.total -= back;
  if (entry->cost == 0) entries.erase(entry);
  return back;
}

}  // namespace spillway::core
