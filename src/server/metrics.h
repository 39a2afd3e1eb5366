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
  std::string render() const;

  // Upper bounds (µs) of the latency histogram's buckets; one more bucket holds the rest.
  static constexpr std::array<Micros, 12> kBuckets{25,   50,   100,   250,   500,    1000,
                                                   2500, 5000, 10000, 25000, 100000, 1000000};
  // Every counter summed over the threads' shards at one moment (for /v1/stats and render()).
  struct Snapshot {
    std::map<std::string, std::array<std::uint64_t, 3>> decisions;  // [denied, allowed, shadow]
    std::array<std::uint64_t, 2> outcomes{};                        // [denied, allowed]
    std::map<std::pair<std::string, int>, std::uint64_t> requests;  // endpoint, status
    std::map<std::pair<std::string, bool>, std::uint64_t> backend_errors;  // kind, allowed
    std::array<std::uint64_t, kBuckets.size() + 1> latency_buckets{};
    std::uint64_t latency_count = 0;
    double latency_sum_seconds = 0;
    // The same histogram for the decision endpoints only (/v1/check, /v1/auth, /v1/limit).
    std::array<std::uint64_t, kBuckets.size() + 1> decision_latency_buckets{};
    std::uint64_t decision_latency_count = 0;
    // The latency below which a fraction q of requests answered, as a bucket's upper bound in
    // µs (the histogram's resolution); -1 beyond the last bound, 0 with no request yet.
    Micros latency_quantile(double q) const;
    Micros decision_latency_quantile(double q) const;
  };
  Snapshot snapshot() const;

 private:
  struct Shard {
    std::thread::id owner;
    std::mutex mutex;  // taken by its thread and by render(): in practice never contended
    std::map<std::string, std::array<std::uint64_t, 3>, std::less<>>
        decisions;                            // [denied, allowed, shadow_denied]
    std::array<std::uint64_t, 2> outcomes{};  // [denied, allowed]
    std::map<std::string, std::map<int, std::uint64_t>, std::less<>> requests;  // endpoint, status
    std::map<std::pair<std::string, bool>, std::uint64_t> backend_errors;       // kind, allowed
    std::array<std::uint64_t, kBuckets.size() + 1> latency_buckets{};
    std::uint64_t latency_count = 0;
    double latency_sum_seconds = 0;
    std::array<std::uint64_t, kBuckets.size() + 1> decision_latency_buckets{};
    std::uint64_t decision_latency_count = 0;
  };
  Shard& local();

  const std::uint64_t id_;  // unique for the process's lifetime: the thread-local cache's key
  mutable std::mutex shards_mutex_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace spillway::server
