#include "src/server/metrics.h"

#include <atomic>

#include "src/core/metrics_text.h"

namespace spillway::server {
namespace {

std::atomic<std::uint64_t> next_metrics_id{1};

// A key for `map` without allocating when it is already there.
template <typename Map>
typename Map::mapped_type& entry(Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
  return it->second;
}

}  // namespace

Metrics::Metrics() : id_(next_metrics_id.fetch_add(1, std::memory_order_relaxed)) {}
Metrics::~Metrics() = default;

Metrics::Shard& Metrics::local() {
  // The last Metrics this thread counted in, and its shard. Ids are never reused, so an entry
  // left by a destroyed Metrics can never match.
  thread_local std::uint64_t cached_id = 0;
  thread_local Shard* cached = nullptr;
  if (cached_id == id_) return *cached;
  const std::lock_guard lock(shards_mutex_);
  const auto me = std::this_thread::get_id();
  Shard* shard = nullptr;
  for (const auto& s : shards_) {
    if (s->owner == me) shard = s.get();
  }
  if (shard == nullptr) {
    shards_.push_back(std::make_unique<Shard>());
    shard = shards_.back().get();
    shard->owner = me;
  }
  cached_id = id_;
  cached = shard;
  return *shard;
}

void Metrics::decision(std::string_view layer, bool allowed, bool shadow) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++entry(shard.counters.decisions, layer)[allowed ? 1 : shadow ? 2 : 0];
}

void Metrics::request(std::string_view endpoint, int status, Micros latency) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  Counters& c = shard.counters;
  ++entry(c.requests, endpoint)[status];
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && latency > kBuckets[bucket]) ++bucket;
  ++c.latency.buckets[bucket];
  ++c.latency.count;
  c.latency_sum_seconds += static_cast<double>(latency) / 1e6;
  if (endpoint == "/v1/check" || endpoint == "/v1/auth" || endpoint == "/v1/limit") {
    ++c.decision_latency.buckets[bucket];
    ++c.decision_latency.count;
  }
}

void Metrics::backend_error(std::string_view kind, bool allowed) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++shard.counters.backend_errors[{std::string(kind), allowed}];
}

void Metrics::reservation(std::string_view event) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++entry(shard.counters.reservations, event);
}

void Metrics::settled_units(std::string_view layer, std::int64_t refunded, std::int64_t charged) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  auto& units = entry(shard.counters.settled_units, layer);
  units[0] += static_cast<std::uint64_t>(refunded);
  units[1] += static_cast<std::uint64_t>(charged);
}

void Metrics::delayed(std::string_view outcome) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++entry(shard.counters.delayed, outcome);
}

void Metrics::shed(std::string_view layer, std::string_view priority) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++shard.counters.shed[{std::string(layer), std::string(priority)}];
}

void Metrics::hold(std::string_view layer, std::string_view event) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++shard.counters.holds[{std::string(layer), std::string(event)}];
}

void Metrics::outcome(bool allowed) {
  Shard& shard = local();
  const std::lock_guard lock(shard.mutex);
  ++shard.counters.outcomes[allowed ? 1 : 0];
}

void Metrics::Counters::add(const Counters& other) {
  for (const auto& [layer, counts] : other.decisions) {
    auto& total = entry(decisions, layer);
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += counts[i];
  }
  for (std::size_t i = 0; i < outcomes.size(); ++i) outcomes[i] += other.outcomes[i];
  for (const auto& [endpoint, by_status] : other.requests) {
    auto& total = entry(requests, endpoint);
    for (const auto& [status, count] : by_status) total[status] += count;
  }
  for (const auto& [kind, count] : other.backend_errors) backend_errors[kind] += count;
  for (const auto& [event, count] : other.reservations) entry(reservations, event) += count;
  for (const auto& [what, count] : other.delayed) entry(delayed, what) += count;
  for (const auto& [key, count] : other.shed) shed[key] += count;
  for (const auto& [key, count] : other.holds) holds[key] += count;
  for (const auto& [layer, units] : other.settled_units) {
    auto& total = entry(settled_units, layer);
    total[0] += units[0];
    total[1] += units[1];
  }
  for (auto [mine, theirs] : {std::pair{&latency, &other.latency},
                              std::pair{&decision_latency, &other.decision_latency}}) {
    for (std::size_t i = 0; i < mine->buckets.size(); ++i) mine->buckets[i] += theirs->buckets[i];
    mine->count += theirs->count;
  }
  latency_sum_seconds += other.latency_sum_seconds;
}

Metrics::Snapshot Metrics::snapshot() const {
  Snapshot sum;
  const std::lock_guard lock(shards_mutex_);
  for (const auto& shard : shards_) {
    const std::lock_guard shard_lock(shard->mutex);
    sum.add(shard->counters);
  }
  return sum;
}

Micros Metrics::Histogram::quantile(double q) const {
  if (count == 0) return 0;
  const double rank = q * static_cast<double>(count);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += buckets[i];
    if (static_cast<double>(cumulative) >= rank) return kBuckets[i];
  }
  return -1;
}

std::string Metrics::render() const {
  // Sum the shards first, then print in a stable order.
  const Snapshot sum = snapshot();
  std::string out;
  append_metric_family(out, "spillway_decisions_total", MetricType::kCounter,
                       "Layer decisions by result.");
  for (const auto& [layer, counts] : sum.decisions) {
    for (const std::size_t result : {1, 0, 2}) {
      if (counts[result] == 0) continue;
      static constexpr std::string_view kResults[] = {"denied", "allowed", "shadow_denied"};
      append_metric_sample(out, "spillway_decisions_total",
                           {{"layer", layer}, {"result", kResults[result]}}, counts[result]);
    }
  }
  append_metric_family(out, "spillway_requests_total", MetricType::kCounter,
                       "HTTP requests by endpoint and status.");
  for (const auto& [endpoint, by_status] : sum.requests) {
    for (const auto& [status, count] : by_status) {
      append_metric_sample(out, "spillway_requests_total",
                           {{"endpoint", endpoint}, {"status", std::to_string(status)}}, count);
    }
  }
  append_metric_family(out, "spillway_backend_errors_total", MetricType::kCounter,
                       "Backend errors by kind, and what on_error answered (allow: admitted "
                       "without a decision; deny: 503, or 403 for nginx).");
  for (const auto& [key, count] : sum.backend_errors) {
    append_metric_sample(out, "spillway_backend_errors_total",
                         {{"kind", key.first}, {"answer", key.second ? "allow" : "deny"}}, count);
  }
  // Shaping's family appears once an answer was delayed (most servers delay none).
  if (!sum.delayed.empty()) {
    append_metric_family(out, "spillway_delayed_requests_total", MetricType::kCounter,
                         "GET /v1/auth answers admitted after a delay (max_delay): held until "
                         "due (held), denied because server.max_delayed were held (refused), "
                         "sent early at shutdown (released_early).");
    for (const auto& [what, count] : sum.delayed) {
      append_metric_sample(out, "spillway_delayed_requests_total", {{"outcome", what}}, count);
    }
  }
  // Load shedding's family appears once a request was shed (most servers keep no reserve).
  if (!sum.shed.empty()) {
    append_metric_family(out, "spillway_shed_requests_total", MetricType::kCounter,
                         "Requests denied by a layer within the share it keeps for higher "
                         "priorities (reserve), by layer and the request's priority.");
    for (const auto& [key, count] : sum.shed) {
      append_metric_sample(out, "spillway_shed_requests_total",
                           {{"layer", key.first}, {"priority", key.second}}, count);
    }
  }
  // Concurrency limits' family appears once a slot was taken.
  if (!sum.holds.empty()) {
    append_metric_family(out, "spillway_holds_total", MetricType::kCounter,
                         "Concurrency limits: slots taken (acquired), given back by a release "
                         "(released), or freed by their hold_ttl before their release came "
                         "(expired), by layer. Across instances, acquired - released over a "
                         "window longer than hold_ttl is what expired unreleased.");
    for (const auto& [key, count] : sum.holds) {
      append_metric_sample(out, "spillway_holds_total",
                           {{"layer", key.first}, {"event", key.second}}, count);
    }
  }
  // The usage-based limits' families appear once a reservation was made (most servers make none).
  if (!sum.reservations.empty()) {
    append_metric_family(out, "spillway_reservations_total", MetricType::kCounter,
                         "Usage-based limits: reservations made (reserved), committed and "
                         "cancelled; those never settled expire with their estimate charged.");
    for (const auto& [event, count] : sum.reservations) {
      append_metric_sample(out, "spillway_reservations_total", {{"event", event}}, count);
    }
    append_metric_family(out, "spillway_settled_units_total", MetricType::kCounter,
                         "Usage-based limits: units given back by settlements (refunded: actual "
                         "below the estimate) and charged without a check (debt: above it).");
    for (const auto& [layer, units] : sum.settled_units) {
      append_metric_sample(out, "spillway_settled_units_total",
                           {{"layer", layer}, {"kind", "refunded"}}, units[0]);
      append_metric_sample(out, "spillway_settled_units_total",
                           {{"layer", layer}, {"kind", "debt"}}, units[1]);
    }
  }
  append_metric_family(out, "spillway_request_duration_seconds", MetricType::kHistogram,
                       "Time to answer a request.");
  append_metric_histogram(out, "spillway_request_duration_seconds", {}, kBuckets,
                          sum.latency.buckets, sum.latency_sum_seconds);
  return out;
}

}  // namespace spillway::server
