// Counters and a latency histogram for GET /metrics (Prometheus text format 0.0.4).
//
// Thread safety: every method may be called from any thread. Each thread counts in a shard of its
// own (found through a thread-local cache, so counting allocates nothing after a label's first
// use and threads do not share cache lines); render() adds the shards up.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "spillway/duration.h"

namespace spillway::server {

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A layer's decision; a shadow layer's denial counts as result="shadow_denied", not "denied".
  void decision(std::string_view layer, bool allowed, bool shadow = false);
  // A request's answer: admitted or denied (a decision, not an error).
  void outcome(bool allowed);
  void request(std::string_view endpoint, int status, Micros latency);
  // A backend error (kind: errc_name) and what on_error answered for it.
  void backend_error(std::string_view kind, bool allowed);
  // Usage-based limits: a reservation made ("reserved"), committed or cancelled.
  void reservation(std::string_view event);
  // A settled layer's units given back (actual below the estimate) and charged as debt (above).
  void settled_units(std::string_view layer, std::int64_t refunded, std::int64_t charged);
  // Shaping on GET /v1/auth: an admitted answer held for its delay ("held"), denied because
  // server.max_delayed were held already ("refused"), or sent before its time at shutdown
  // ("released_early").
  void delayed(std::string_view outcome);
  // Load shedding: a request denied by `layer` within the share it kept from `priority`.
  void shed(std::string_view layer, std::string_view priority);
  // Concurrency limits: a slot of `layer` taken ("acquired"), given back by a release
  // ("released"), or found freed already by its hold_ttl when its release came ("expired").
  void hold(std::string_view layer, std::string_view event);
  std::string render() const;

  // Upper bounds (µs) of the latency histogram's buckets; one more bucket holds the rest.
  static constexpr std::array<Micros, 12> kBuckets{25,   50,   100,   250,   500,    1000,
                                                   2500, 5000, 10000, 25000, 100000, 1000000};
  // A latency histogram over kBuckets.
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size() + 1> buckets{};
    std::uint64_t count = 0;
    // The latency below which a fraction q of the samples fall, as a bucket's upper bound in µs
    // (the histogram's resolution); -1 beyond the last bound, 0 with no sample yet.
    Micros quantile(double q) const;
  };
  // Every counter: one set per thread (its shard), and their sum at one moment (snapshot(), for
  // /v1/stats and render()).
  struct Counters {
    std::map<std::string, std::array<std::uint64_t, 3>, std::less<>>
        decisions;                            // [denied, allowed, shadow_denied]
    std::array<std::uint64_t, 2> outcomes{};  // [denied, allowed]
    std::map<std::string, std::map<int, std::uint64_t>, std::less<>> requests;  // endpoint, status
    std::map<std::pair<std::string, bool>, std::uint64_t> backend_errors;       // kind, allowed
    std::map<std::string, std::uint64_t, std::less<>> reservations;             // event -> count
    std::map<std::string, std::array<std::uint64_t, 2>, std::less<>>
        settled_units;                                          // layer -> [refunded, charged]
    std::map<std::string, std::uint64_t, std::less<>> delayed;  // outcome -> count
    std::map<std::pair<std::string, std::string>, std::uint64_t> shed;   // layer, priority
    std::map<std::pair<std::string, std::string>, std::uint64_t> holds;  // layer, event
    Histogram latency;                                                   // every request
    double latency_sum_seconds = 0;
    Histogram decision_latency;  // the decision endpoints only (/v1/check, /v1/auth, /v1/limit)
    void add(const Counters& other);
  };
  using Snapshot = Counters;
  Snapshot snapshot() const;

 private:
  struct Shard {
    std::thread::id owner;
    std::mutex mutex;  // taken by its thread and by snapshot(): in practice never contended
    Counters counters;
  };
  Shard& local();

  const std::uint64_t id_;  // unique for the process's lifetime: the thread-local cache's key
  mutable std::mutex shards_mutex_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace spillway::server
