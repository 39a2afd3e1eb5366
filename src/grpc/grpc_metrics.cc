#include "src/grpc/grpc_metrics.h"

#include "src/core/metrics_text.h"

namespace spillway::grpc_server {
namespace {

constexpr std::array<const char*, GrpcMetrics::kCodes> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

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
  constexpr std::string_view kMethod = "ShouldRateLimit";
  append_metric_family(out, "spillway_grpc_requests_total", MetricType::kCounter,
                       "gRPC calls answered, by method and status code.");
  for (int code = 0; code < kCodes; ++code) {
    const std::uint64_t n = calls_[static_cast<std::size_t>(code)].load(std::memory_order_relaxed);
    if (n == 0 && code != 0) continue;
    append_metric_sample(
        out, "spillway_grpc_requests_total",
        {{"method", kMethod}, {"code", kCodeNames[static_cast<std::size_t>(code)]}}, n);
  }
  append_metric_family(out, "spillway_grpc_request_duration_seconds", MetricType::kHistogram,
                       "Time from a call's arrival to its answer.");
  std::array<std::uint64_t, kBuckets.size() + 1> counts{};
  for (std::size_t b = 0; b < counts.size(); ++b) {
    counts[b] = buckets_[b].load(std::memory_order_relaxed);
  }
  const Micros sum_us = static_cast<Micros>(latency_sum_us_.load(std::memory_order_relaxed));
  append_metric_histogram(out, "spillway_grpc_request_duration_seconds", {{"method", kMethod}},
                          kBuckets, counts, static_cast<double>(sum_us) / 1e6);
}

}  // namespace spillway::grpc_server
