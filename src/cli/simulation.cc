#include "src/cli/simulation.h"

#include <algorithm>
#include <map>
#include <vector>

#include "spillway/clock.h"
#include "spillway/open_store.h"

namespace spillway::cli {
namespace {

std::size_t retry_bucket(Micros retry_after) {
  if (retry_after < 0) return kRetryBuckets.size() - 1;  // never
  Micros bound = kMicrosPerMilli;
  for (std::size_t i = 0; i + 2 < kRetryBuckets.size(); ++i, bound *= 10) {
    if (retry_after < bound) return i;
  }
  return kRetryBuckets.size() - 2;
}

// What one key went through, for the per-key figures.
struct KeyLog {
  std::int64_t offered = 0, admitted = 0;
  Micros first = kMaxNow;                            // its earliest request's time
  std::vector<std::pair<Micros, std::int64_t>> log;  // its admissions: (trace time, cost)
};

// The most cost of `log` (sorted by time) within one window (t − period, t], and within
// [first, first + period).
std::pair<std::int64_t, std::int64_t> window_figures(
    const std::vector<std::pair<Micros, std::int64_t>>& log, Micros period, Micros first) {
  std::int64_t most = 0, in_window = 0, at_start = 0;
  std::size_t oldest = 0;
  for (const auto& [at, cost] : log) {
    in_window += cost;
    while (log[oldest].first <= at - period) in_window -= log[oldest++].second;
    most = std::max(most, in_window);
    if (at - first < period) at_start += cost;
  }
  return {most, at_start};
}

}  // namespace

Micros series_bucket(Micros span) {
  for (Micros magnitude = kMicrosPerMilli;; magnitude *= 10) {
    for (Micros factor : {1, 2, 5}) {
      if (span / (factor * magnitude) <= 240) return factor * magnitude;
    }
  }
}

Result<Simulation> simulate(std::span<const TraceLine> trace, const SimulationSettings& settings) {
  Simulation out;
  out.max_delay = settings.max_delay;
  if (!trace.empty()) {
    out.start = trace.front().at;
    for (const TraceLine& r : trace) out.start = std::min(out.start, r.at);
  }
  Micros end = out.start;
  for (const TraceLine& r : trace) end = std::max(end, r.at);
  out.bucket = series_bucket(end - out.start);
  const std::size_t buckets = static_cast<std::size_t>((end - out.start) / out.bucket) + 1;
  out.offered_series.assign(buckets, 0);
  for (const TraceLine& r : trace)
    ++out.offered_series[static_cast<std::size_t>((r.at - out.start) / out.bucket)];

  for (Algorithm algorithm : settings.algorithms) {
    const std::optional<std::int64_t> burst =
        takes_burst(algorithm) ? settings.burst : std::optional<std::int64_t>();
    Result<Limit> limit =
        Limit::make(algorithm, settings.limit, settings.period, burst, settings.max_delay);
    if (!limit) {
      return invalid_argument(
          "--limit/--period/--burst/--max-delay: " + std::string(algorithm_name(algorithm)) + ": " +
          limit.error().message);
    }
    // The store `spillway replay --backend memory` makes: a manual clock, no background sweep,
    // every check at the request's own time.
    Result<std::unique_ptr<Store>> store =
        open_store("memory", {.memory = {.clock = std::make_shared<ManualClock>(),
                                         .sweep_interval = std::chrono::milliseconds(0)}});
    if (!store) return std::unexpected(store.error());
    AlgorithmOutcome outcome{.algorithm = algorithm, .limit = *limit};
    outcome.admitted_series.assign(buckets, 0);
    outcome.denied_series.assign(buckets, 0);
    outcome.delayed_series.assign(settings.max_delay > 0 ? buckets : 0, 0);
    std::map<std::string, KeyLog, std::less<>> keys;
    for (const TraceLine& r : trace) {
      Result<Decision> d = (*store)->check(r.key, *limit, r.cost, r.at);
      if (!d) return std::unexpected(d.error());
      const auto bucket = static_cast<std::size_t>((r.at - out.start) / out.bucket);
      KeyLog& key = keys[r.key];
      ++outcome.offered;
      ++key.offered;
      key.first = std::min(key.first, r.at);
      if (d->allowed) {
        ++outcome.admitted;
        ++outcome.admitted_series[bucket];
        ++key.admitted;
        key.log.emplace_back(r.at + d->delay, r.cost);  // when it proceeds
        if (d->delay > 0) {
          ++outcome.delayed;
          ++outcome.delayed_series[bucket];
          outcome.delay_sum += d->delay;
          outcome.delay_max = std::max(outcome.delay_max, d->delay);
        }
      } else {
        ++outcome.denied;
        ++outcome.denied_series[bucket];
        ++outcome.retry_histogram[retry_bucket(d->retry_after)];
      }
    }
    // Windows on the trace's time axis: a trace out of order is measured as if sorted.
    double sum = 0, squares = 0;
    for (auto& [name, key] : keys) {
      std::stable_sort(key.log.begin(), key.log.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      const auto [most, at_start] = window_figures(key.log, settings.period, key.first);
      outcome.max_admitted_in_any_period = std::max(outcome.max_admitted_in_any_period, most);
      outcome.burst_at_start = std::max(outcome.burst_at_start, at_start);
      if (key.offered - key.admitted > outcome.most_denied_key_denied) {
        outcome.most_denied_key = name;
        outcome.most_denied_key_offered = key.offered;
        outcome.most_denied_key_denied = key.offered - key.admitted;
      }
      const double ratio = static_cast<double>(key.admitted) / static_cast<double>(key.offered);
      sum += ratio;
      squares += ratio * ratio;
    }
    outcome.fairness = squares > 0 ? sum * sum / (static_cast<double>(keys.size()) * squares) : 1.0;
    out.outcomes.push_back(std::move(outcome));
  }
  return out;
}

}  // namespace spillway::cli
