// The rate limit headers that pair a limit with a remaining say the same on every path for the
// same limit: POST /v1/limit and POST /v1/check (X-RateLimit-Limit / -Remaining, over loopback
// to an in-process server) and Envoy's rate limit service (RateLimit-Limit / -Remaining that
// spillway adds to its answer, rls.response_headers: draft). For every algorithm, and for the
// bucket algorithms with a burst below and above the limit, the limit is Limit::capacity(): the
// burst a bucket's remaining counts down from (a gcra 10/min burst 5 says 5, and 4 after one
// request), the limit L for the windows.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/limit.h"
#include "spillway/memory_store.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_engine.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"

namespace spillway {
namespace {

struct HeaderLimitCase {
  Algorithm algorithm;
  std::optional<std::int64_t> burst;
};

std::string header_limit_case_name(const HeaderLimitCase& c) {
  return std::string(algorithm_name(c.algorithm)) +
         (c.burst ? " burst " + std::to_string(*c.burst) : "");
}

// The same limit, 10 a minute, on each path; `requests` of cost 1 from one caller; the
// (limit, remaining) each path's headers report after the last.
struct HeaderLimitSeen {
  std::string limit, remaining;
  friend bool operator==(const HeaderLimitSeen&, const HeaderLimitSeen&) = default;
};

std::ostream& operator<<(std::ostream& out, const HeaderLimitSeen& s) {
  return out << "{limit " << s.limit << ", remaining " << s.remaining << "}";
}

HeaderLimitSeen header_limit_over_limit_endpoint(const HeaderLimitCase& c, int requests) {
  testing::RunningService s =
      testing::start_service(policy::default_config(), std::make_unique<MemoryStore>());
  std::string body = R"({"key":"k","algorithm":")" + std::string(algorithm_name(c.algorithm)) +
                     R"(","limit":10,"period":"1m")";
  if (c.burst) body += ",\"burst\":" + std::to_string(*c.burst);
  body += "}";
  testing::HttpReply reply;
  for (int i = 0; i < requests; ++i) reply = testing::http(s.port(), "POST", "/v1/limit", body);
  EXPECT_EQ(reply.status, 200) << body << " " << reply.body;
  return {reply.header("x-ratelimit-limit"), reply.header("x-ratelimit-remaining")};
}

HeaderLimitSeen header_limit_over_check_endpoint(const HeaderLimitCase& c, int requests) {
  policy::Config config = policy::default_config();
  config.policy.layers = {{.name = "edge",
                           .key = {"ip"},
                           .algorithm = c.algorithm,
                           .limit = policy::RateSpec{10, kMicrosPerMinute, c.burst}}};
  testing::RunningService s =
      testing::start_service(std::move(config), std::make_unique<MemoryStore>());
  testing::HttpReply reply;
  for (int i = 0; i < requests; ++i) {
    reply = testing::http(s.port(), "POST", "/v1/check", R"({"ip":"203.0.113.7"})");
  }
  EXPECT_EQ(reply.status, 200) << reply.body;
  return {reply.header("x-ratelimit-limit"), reply.header("x-ratelimit-remaining")};
}

HeaderLimitSeen header_limit_over_rls(const HeaderLimitCase& c, int requests) {
  std::string rules =
      "domain: headers\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, "
      "requests_per_unit: 10, algorithm: " +
      std::string(algorithm_name(c.algorithm));
  if (c.burst) rules += ", burst: " + std::to_string(*c.burst);
  rules += "}\n";
  Result<rls::DomainRules> domain = rls::parse_rls_yaml(rules, "headers.yaml");
  EXPECT_TRUE(domain.has_value()) << (domain ? "" : domain.error().message);
  if (!domain) return {};
  rls::RlsRules all;
  all.domains.emplace(domain->domain, std::move(*domain));
  MemoryStore store;
  rls::RlsEngine engine(store, std::make_shared<const rls::RlsRules>(std::move(all)),
                        rls::RlsOptions{.response_headers = rls::ResponseHeaders::kDraft});
  rls::RlsResponse last;
  for (int i = 0; i < requests; ++i) {
    rls::RlsRequest request{.domain = "headers"};
    request.descriptors.push_back({.entries = {{"k", "v"}}});
    std::optional<Result<rls::RlsResponse>> out;
    engine.should_rate_limit(request, [&](Result<rls::RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    if (out && *out) last = **out;
  }
  HeaderLimitSeen seen;
  for (const auto& [name, value] : last.response_headers) {
    if (name == "RateLimit-Limit") seen.limit = value;
    if (name == "RateLimit-Remaining") seen.remaining = value;
  }
  return seen;
}

TEST(RlsHeaderLimit, EveryPathReportsTheLimitItsRemainingCountsDownFrom) {
  std::vector<HeaderLimitCase> cases;
  for (Algorithm a : kAlgorithms) {
    cases.push_back({a, std::nullopt});
    if (takes_burst(a)) {
      cases.push_back({a, 5});
      cases.push_back({a, 20});
    }
  }
  for (const HeaderLimitCase& c : cases) {
    const std::int64_t capacity =
        Limit::make(c.algorithm, 10, kMicrosPerMinute, c.burst)->capacity();
    for (int requests : {1, 3}) {
      SCOPED_TRACE(header_limit_case_name(c) + ", after " + std::to_string(requests));
      const HeaderLimitSeen expected{std::to_string(capacity), std::to_string(capacity - requests)};
      EXPECT_EQ(header_limit_over_rls(c, requests), expected) << "Envoy's rate limit service";
      EXPECT_EQ(header_limit_over_limit_endpoint(c, requests), expected) << "POST /v1/limit";
      EXPECT_EQ(header_limit_over_check_endpoint(c, requests), expected) << "POST /v1/check";
    }
  }
}

// The issue's case, spelled out: a gcra 10/min with a burst of 5.
TEST(RlsHeaderLimit, AGcraOfTenAMinuteWithABurstOfFiveSaysFiveThenFour) {
  const HeaderLimitCase gcra{Algorithm::kGcra, 5};
  EXPECT_EQ(header_limit_over_rls(gcra, 1), (HeaderLimitSeen{"5", "4"}));
  EXPECT_EQ(header_limit_over_limit_endpoint(gcra, 1), (HeaderLimitSeen{"5", "4"}));
  EXPECT_EQ(Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerMinute)->capacity(), 10);
  EXPECT_EQ(Limit::make(Algorithm::kTokenBucket, 10, kMicrosPerMinute, 20)->capacity(), 20);
}

}  // namespace
}  // namespace spillway
