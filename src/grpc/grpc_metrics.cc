#include "src/grpc/grpc_metrics.h"

#include <cstdio>

namespace spillway::grpc_server {
namespace {

constexpr std::array<const char*, GrpcMetrics::kCodes> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

std::string seconds(Micros micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(micros) / 1e6);
  return text;
}

}  // namespace

void GrpcMetrics::call(int code, Micros latency) {
  if (code < 0 || code >= kCodes) code = 2;  // UNKNOWN
  calls_[static_cast<std::size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && latency > kBuckets[bucket]) ++bucket;
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_sum_us_.fetch_add(static_cast<std::uint64_t>(latency < 0 ? 0 : latency),
                            std::memory_order_relaxed);
}

void GrpcMetrics::render(std::string& out) const {
  out +=
      "# HELP spillway_grpc_requests_total gRPC calls answered, by method and status code.\n"
      "# TYPE spillway_grpc_requests_total counter\n";
  for (int code = 0; code < kCodes; ++code) {
    const std::uint64_t n = calls_[static_cast<std::size_t>(code)].load(std::memory_order_relaxed);
    if (n == 0 && code != 0) continue;
    out += "spillway_grpc_requests_total{method=\"ShouldRateLimit\",code=\"";
    out += kCodeNames[static_cast<std::size_t>(code)];
    out += "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP spillway_grpc_request_duration_seconds Time from a call's arrival to its answer.\n"
      "# TYPE spillway_grpc_request_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
    cumulative += buckets_[b].load(std::memory_order_relaxed);
    out += "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"";
    out += b < kBuckets.size() ? seconds(kBuckets[b]) : std::string("+Inf");
    out += "\"} " + std::to_string(cumulative) + "\n";
  }
  out += "spillway_grpc_request_duration_seconds_sum{method=\"ShouldRateLimit\"} " +
         seconds(static_cast<Micros>(latency_sum_us_.load(std::memory_order_relaxed))) + "\n";
  out += "spillway_grpc_request_duration_seconds_count{method=\"ShouldRateLimit\"} " +
         std::to_string(cumulative) + "\n";
}

}  // namespace spillway::grpc_server
