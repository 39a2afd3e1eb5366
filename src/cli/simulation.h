// `spillway simulate`'s engine: one trace through each chosen algorithm under the same limit, on
// the in-process store with the trace's own time — exactly what `spillway replay --backend memory`
// decides for each request — and what the report shows of it.
//
// Units: times in µs (the trace's), series in buckets of `bucket` µs from the first request.
// Counts are requests; "admitted in a period" sums costs (the limit's unit). Pure computation
// over the trace; thread compatible.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "src/cli/replay.h"

namespace spillway::cli {

struct SimulationSettings {
  std::int64_t limit = 0;
  Micros period = 0;
  std::optional<std::int64_t> burst;  // token_bucket and gcra only; the others ignore it
  // Shaping (docs/SPEC.md §2.2): token_bucket and gcra only; 0 none. Then `algorithms` holds
  // only those two (simulate refuses the others).
  Micros max_delay = 0;
  std::vector<Algorithm> algorithms;  // in the order to report them
};

// retry_after of denied requests in these buckets: <1 ms, 1–10 ms, 10–100 ms, 0.1–1 s, 1–10 s,
// 10–100 s, ≥100 s, and never (the request can never fit).
inline constexpr std::array<const char*, 8> kRetryBuckets = {
    "<1ms", "1-10ms", "10-100ms", "0.1-1s", "1-10s", "10-100s", ">=100s", "never"};

struct AlgorithmOutcome {
  Algorithm algorithm;
  Limit limit;  // as run (burst applied where the algorithm takes one)
  std::int64_t offered = 0, admitted = 0, denied = 0;
  // The most cost admitted to one key within any window (t − period, t] of the trace's time
  // (a trace out of order is measured as if sorted): above the limit only where an algorithm
  // lets a key exceed it (fixed_window across a window edge, a burst above L).
  std::int64_t max_admitted_in_any_period = 0;
  // The most cost admitted to one key within `period` of that key's earliest request.
  std::int64_t burst_at_start = 0;
  // Jain's index of the keys' admission ratios (admitted / offered): 1 when every key gets the
  // same share of what it asks, 1/n when one key gets everything.
  double fairness = 1;
  // The key denied most often (the first by name on a tie; "" when nothing was denied), with its
  // offered and denied requests: in the `attack` pattern, "attacker".
  std::string most_denied_key;
  std::int64_t most_denied_key_offered = 0, most_denied_key_denied = 0;
  std::vector<std::int64_t> admitted_series, denied_series;  // per bucket
  // With a max_delay: the admitted requests that wait (in admitted too), per bucket of their
  // arrival, and what they wait: the sum and the longest (µs). The period figures above are
  // then measured at the time each request proceeds (arrival + delay).
  std::int64_t delayed = 0;
  Micros delay_sum = 0, delay_max = 0;
  std::vector<std::int64_t> delayed_series;
  std::array<std::int64_t, kRetryBuckets.size()> retry_histogram{};
};

struct Simulation {
  Micros start = 0;   // the first request's time
  Micros bucket = 0;  // series bucket width
  std::vector<std::int64_t> offered_series;
  Micros max_delay = 0;                    // settings.max_delay: the outcomes have delays
  std::vector<AlgorithmOutcome> outcomes;  // in settings.algorithms order
};

// A bucket width of 1, 2 or 5 × 10^k µs (at least 1 ms) that cuts `span` into at most ~240.
Micros series_bucket(Micros span);

// Errors: a limit the settings cannot make (naming --limit, --period or --burst), or a store
// error (none on the in-process store).
Result<Simulation> simulate(std::span<const TraceLine> trace, const SimulationSettings& settings);

}  // namespace spillway::cli
