#include "src/core/sliding_log.h"

#include <algorithm>

namespace spillway::core {

namespace {

// The log as it stands at `now`: the time it is decided at (never before its newest entry), the
// first entry still live (those at or before at - P have left the window), and the live total.
struct LiveLog {
  Micros at;
  std::size_t first_live;
  std::int64_t used;
};
LiveLog live_at(const SlidingLogState& state, const Limit& limit, Micros now) {
  const auto& entries = state.entries;
  LiveLog live{
      .at = entries.empty() ? now : std::max(now, entries.back().at), .first_live = 0, .used = 0};
  std::int64_t expired = 0;
  while (live.first_live < entries.size() &&
         entries[live.first_live].at <= live.at - limit.period()) {
    expired += entries[live.first_live++].cost;
  }
  live.used = state.total - expired;
  return live;
}

// Adds `cost` > 0 at live.at (merged with an entry at that time) and drops the expired entries.
void add_entry(SlidingLogState& state, const LiveLog& live, std::int64_t cost) {
  auto& entries = state.entries;
  entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(live.first_live));
  if (!entries.empty() && entries.back().at == live.at) {
    entries.back().cost += cost;
  } else {
    entries.push_back({.at = live.at, .cost = cost});
  }
  state.total = live.used + cost;
}

}  // namespace

Decision decide(SlidingLogState& state, const Limit& limit, Micros now, std::int64_t cost) {
  const std::int64_t cap = limit.admit_capacity();  // L less what higher priorities keep
  const Micros period = limit.period();
  auto& entries = state.entries;
  const LiveLog live = live_at(state, limit, now);
  const std::size_t first_live = live.first_live;
  std::int64_t used = live.used;

  Decision d{.allowed = false, .limit = limit.limit()};
  if (cost <= cap && used + cost <= cap) {
    d.allowed = true;
    if (cost > 0) {
      add_entry(state, live, cost);
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
  const LiveLog log = live_at(state, limit, now);
  if (delta > 0) {
    const std::int64_t charged = std::min(delta, (1 + kDebtLimits) * limit.limit() - log.used);
    if (charged <= 0) return 0;
    add_entry(state, log, charged);
    return charged;
  }
  const auto live = entries.begin() + static_cast<std::ptrdiff_t>(log.first_live);
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
