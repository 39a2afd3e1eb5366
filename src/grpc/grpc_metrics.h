// Counts and latency of the gRPC listener's ShouldRateLimit calls, by status code, for /metrics:
//   spillway_grpc_requests_total{method="ShouldRateLimit",code="OK"} 12
//   spillway_grpc_request_duration_seconds_bucket{method="ShouldRateLimit",le="0.001"} 10
// Thread safety: every method from any thread (relaxed atomics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "spillway/duration.h"

namespace spillway::grpc_server {

class GrpcMetrics {
 public:
  static constexpr int kCodes = 17;  // grpc::StatusCode 0..16
  void call(int code, Micros latency);
  void render(std::string& out) const;

 private:
  static constexpr std::array<Micros, 10> kBuckets{100,  250,   500,   1000,   2500,
                                                   5000, 10000, 25000, 100000, 1000000};
  std::array<std::atomic<std::uint64_t>, kCodes> calls_{};
  std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> buckets_{};
  std::atomic<std::uint64_t> latency_sum_us_{0};
};

}  // namespace spillway::grpc_server
