// Counters and a latency histogram for GET /metrics (Prometheus text format 0.0.4).
// Thread-safe: counters are atomics; per-layer counters live in a map under a mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "spillway/duration.h"

namespace spillway::server {

class Metrics {
 public:
  void decision(const std::string& layer, bool allowed);
  void request(const std::string& endpoint, int status, Micros latency);
  void backend_error(const std::string& kind);
  std::string render() const;

 private:
  static constexpr std::array<Micros, 12> kBuckets{25,   50,   100,   250,   500,    1000,
                                                   2500, 5000, 10000, 25000, 100000, 1000000};
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, bool>, std::uint64_t> decisions_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> backend_errors_;
  std::array<std::uint64_t, kBuckets.size() + 1> latency_buckets_{};
  std::uint64_t latency_count_ = 0;
  double latency_sum_seconds_ = 0;
};

}  // namespace spillway::server
