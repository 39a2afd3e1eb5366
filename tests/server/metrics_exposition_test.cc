// The whole Prometheus text of each /metrics producer, byte for byte: the server's counters, the
// gRPC listener's, the rate limit service's stats, the store wrappers' and the tenant
// directory's (the Redis directory's own: tests/redis/redis_tenants_test.cc). Written from the
// text each producer wrote by hand before they shared src/core/metrics_text.h, so that the
// shared writer changed no byte of what Prometheus scrapes.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "spillway/local_fallback.h"
#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"
#include "spillway/tenant_directory.h"
#include "src/core/metrics_text.h"
#include "src/grpc/grpc_metrics.h"
#include "src/memory/tenant_file.h"
#include "src/rls/rls_stats.h"
#include "src/server/metrics.h"

namespace spillway {
namespace {

TEST(MetricsExposition, ServerCountersAndLatencyHistogram) {
  server::Metrics metrics;
  metrics.decision("edge", true);
  metrics.decision("edge", false);
  metrics.decision("edge", false, true);
  metrics.decision("a\"b", true);
  metrics.request("/v1/check", 200, 30);
  metrics.request("/v1/check", 429, 2'000'000);
  metrics.request("/x\\y\n", 404, 100);
  metrics.backend_error("timeout", true);
  metrics.backend_error("unavailable", false);
  EXPECT_EQ(metrics.render(),
            "# HELP spillway_decisions_total Layer decisions by result.\n"
            "# TYPE spillway_decisions_total counter\n"
            "spillway_decisions_total{layer=\"a\\\"b\",result=\"allowed\"} 1\n"
            "spillway_decisions_total{layer=\"edge\",result=\"allowed\"} 1\n"
            "spillway_decisions_total{layer=\"edge\",result=\"denied\"} 1\n"
            "spillway_decisions_total{layer=\"edge\",result=\"shadow_denied\"} 1\n"
            "# HELP spillway_requests_total HTTP requests by endpoint and status.\n"
            "# TYPE spillway_requests_total counter\n"
            "spillway_requests_total{endpoint=\"/v1/check\",status=\"200\"} 1\n"
            "spillway_requests_total{endpoint=\"/v1/check\",status=\"429\"} 1\n"
            "spillway_requests_total{endpoint=\"/x\\\\y\\n\",status=\"404\"} 1\n"
            "# HELP spillway_backend_errors_total Backend errors by kind, and what on_error "
            "answered (allow: admitted without a decision; deny: 503, or 403 for nginx).\n"
            "# TYPE spillway_backend_errors_total counter\n"
            "spillway_backend_errors_total{kind=\"timeout\",answer=\"allow\"} 1\n"
            "spillway_backend_errors_total{kind=\"unavailable\",answer=\"deny\"} 1\n"
            "# HELP spillway_request_duration_seconds Time to answer a request.\n"
            "# TYPE spillway_request_duration_seconds histogram\n"
            "spillway_request_duration_seconds_bucket{le=\"2.5e-05\"} 0\n"
            "spillway_request_duration_seconds_bucket{le=\"5e-05\"} 1\n"
            "spillway_request_duration_seconds_bucket{le=\"0.0001\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.00025\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.0005\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.001\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.0025\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.005\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.01\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.025\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"0.1\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"1\"} 2\n"
            "spillway_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"
            "spillway_request_duration_seconds_sum 2.00013\n"
            "spillway_request_duration_seconds_count 3\n");
}

TEST(MetricsExposition, EmptyServerCountersStillDeclareEveryFamily) {
  server::Metrics metrics;
  const std::string text = metrics.render();
  EXPECT_TRUE(
      text.starts_with("# HELP spillway_decisions_total Layer decisions by result.\n"
                       "# TYPE spillway_decisions_total counter\n"
                       "# HELP spillway_requests_total"))
      << text;
  EXPECT_TRUE(
      text.ends_with("spillway_request_duration_seconds_bucket{le=\"+Inf\"} 0\n"
                     "spillway_request_duration_seconds_sum 0\n"
                     "spillway_request_duration_seconds_count 0\n"))
      << text;
}

TEST(MetricsExposition, GrpcCallsAndLatencyHistogram) {
  grpc_server::GrpcMetrics metrics;
  metrics.call(0, 150);
  metrics.call(8, 5'000'000);
  metrics.call(14, 300);
  std::string text;
  metrics.render(text);
  EXPECT_EQ(
      text,
      "# HELP spillway_grpc_requests_total gRPC calls answered, by method and status code.\n"
      "# TYPE spillway_grpc_requests_total counter\n"
      "spillway_grpc_requests_total{method=\"ShouldRateLimit\",code=\"OK\"} 1\n"
      "spillway_grpc_requests_total{method=\"ShouldRateLimit\",code=\"RESOURCE_EXHAUSTED\"} 1\n"
      "spillway_grpc_requests_total{method=\"ShouldRateLimit\",code=\"UNAVAILABLE\"} 1\n"
      "# HELP spillway_grpc_request_duration_seconds Time from a call's arrival to its answer.\n"
      "# TYPE spillway_grpc_request_duration_seconds histogram\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.0001\"} 0\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.00025\"} "
      "1\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.0005\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.001\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.0025\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.005\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.01\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.025\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"0.1\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"1\"} 2\n"
      "spillway_grpc_request_duration_seconds_bucket{method=\"ShouldRateLimit\",le=\"+Inf\"} 3\n"
      "spillway_grpc_request_duration_seconds_sum{method=\"ShouldRateLimit\"} 5.00045\n"
      "spillway_grpc_request_duration_seconds_count{method=\"ShouldRateLimit\"} 3\n");
}

TEST(MetricsExposition, RateLimitServiceStatsWithEscapedLabels) {
  rls::RlsStats stats;
  std::string text;
  stats.render(text);
  EXPECT_EQ(text, "");  // no series yet: no family at all
  stats.add("d", "k_v", {rls::Stat::kTotalHits, rls::Stat::kWithinLimit}, 3);
  stats.add("d\"x", "a\\b\nc", {rls::Stat::kOverLimit}, 1);
  stats.render(text);
  std::string expected;
  const char* names[] = {"hits_total",        "over_limit_total",
                         "near_limit_total",  "within_limit_total",
                         "shadow_mode_total", "over_limit_with_local_cache_total"};
  const char* help[] = {"Hits (hits_addend) checked against a rule.",
                        "Hits over the limit (shadow_mode and local-cache denials included).",
                        "Hits admitted with less than 20% of the limit left.",
                        "Hits admitted.",
                        "Hits over the limit of a shadow_mode rule (admitted).",
                        "Hits denied by the local over-limit cache without a backend call."};
  const int first[] = {3, 0, 0, 3, 0, 0};
  const int second[] = {0, 1, 0, 0, 0, 0};
  for (int s = 0; s < 6; ++s) {
    const std::string name = std::string("spillway_rls_") + names[s];
    expected += "# HELP " + name + " " + help[s] + "\n# TYPE " + name + " counter\n";
    expected += name + "{domain=\"d\",descriptor=\"k_v\"} " + std::to_string(first[s]) + "\n";
    expected +=
        name + "{domain=\"d\\\"x\",descriptor=\"a\\\\b\\nc\"} " + std::to_string(second[s]) + "\n";
  }
  EXPECT_EQ(text, expected);
}

TEST(MetricsExposition, StoreWrappers) {
  auto memory = [] { return std::make_unique<MemoryStore>(MemoryStoreOptions{}); };
  std::string text;
  OverLimitCache(memory(), 16).append_metrics(text);
  LocalFallbackStore(memory(), memory()).append_metrics(text);
  EXPECT_EQ(text,
            "# HELP spillway_over_limit_cache_hits_total Checks denied by the local over-limit "
            "cache without a backend call.\n"
            "# TYPE spillway_over_limit_cache_hits_total counter\n"
            "spillway_over_limit_cache_hits_total 0\n"
            "# HELP spillway_over_limit_cache_entries Denials the local over-limit cache holds.\n"
            "# TYPE spillway_over_limit_cache_entries gauge\n"
            "spillway_over_limit_cache_entries 0\n"
            "# HELP spillway_local_fallback_decisions_total Checks decided by the in-process "
            "limiter because the backend failed (on_error: local).\n"
            "# TYPE spillway_local_fallback_decisions_total counter\n"
            "spillway_local_fallback_decisions_total 0\n");
}

TEST(MetricsExposition, TenantDirectoryCopy) {
  auto directory = FileTenantDirectory::open("", {});
  ASSERT_TRUE(directory.has_value()) << directory.error().message;
  ASSERT_TRUE((*directory)->put("k1", TenantRecord{.plan = "pro"}).has_value());
  std::string text;
  (*directory)->append_metrics(text);
  EXPECT_EQ(text,
            "# HELP spillway_tenants Tenant records in this process's copy.\n"
            "# TYPE spillway_tenants gauge\n"
            "spillway_tenants 1\n");
}

TEST(MetricsExposition, SignedSamplesKeepTheirSign) {
  std::string text;
  append_metric_sample(text, "a", {}, std::int64_t{-12});
  append_metric_sample(text, "b", {{"l", "v"}}, std::int64_t{9'007'199'254'740'993});
  EXPECT_EQ(text, "a -12\nb{l=\"v\"} 9007199254740993\n");
}

}  // namespace
}  // namespace spillway
