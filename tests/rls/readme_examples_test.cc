// The configuration examples of envoyproxy/ratelimit's README (tests/rls/examples/, our own
// files in the same shape) give the decisions the README documents: which descriptor gets which
// limit, nested rules, key-only rules, a blocked address, the request depth, unlimited,
// shadow_mode, replaces, detailed_metric and wildcards.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "src/rls/rls_engine.h"

namespace spillway::rls {
namespace {

constexpr Micros kReadmeStart = 19'676 * kMicrosPerDay;  // every window starts here
const std::string kExamples = std::string(SPILLWAY_SOURCE_DIR) + "/tests/rls/examples";

struct Example {
  explicit Example(const std::string& file) : clock(std::make_shared<ManualClock>(kReadmeStart)) {
    Result<RlsRules> loaded = load_rls_rules(kExamples + "/" + file);
    EXPECT_TRUE(loaded.has_value()) << loaded.error().message;
    store = std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock});
    engine = std::make_unique<RlsEngine>(
        *store, std::make_shared<const RlsRules>(loaded ? std::move(*loaded) : RlsRules{}),
        RlsOptions{.clock = clock});
  }

  RlsResponse ask(const std::string& domain, std::vector<std::vector<RlsEntry>> descriptors,
                  std::uint32_t hits = 0) {
    RlsRequest request{.domain = domain, .hits_addend = hits};
    for (auto& entries : descriptors) request.descriptors.push_back({.entries = entries});
    std::optional<Result<RlsResponse>> out;
    engine->should_rate_limit(request, [&](Result<RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    return out && *out ? **out : RlsResponse{};
  }
  // The limit a one-descriptor request gets, or nullopt for none.
  std::optional<CurrentLimit> limit_of(const std::string& domain, std::vector<RlsEntry> entries) {
    RlsResponse r = ask(domain, {std::move(entries)});
    return r.statuses.empty() ? std::nullopt : r.statuses[0].current_limit;
  }
  // How many single hits pass before the first denial (at most `cap`).
  int admitted(const std::string& domain, std::vector<std::vector<RlsEntry>> descriptors, int cap) {
    for (int i = 0; i < cap; ++i) {
      if (ask(domain, descriptors).overall_code != Code::kOk) return i;
    }
    return cap;
  }

  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<MemoryStore> store;
  std::unique_ptr<RlsEngine> engine;
};

TEST(RlsReadmeExamples, AllLoadTogetherAsOneDirectory) {
  Result<RlsRules> rules = load_rls_rules(kExamples);
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  EXPECT_EQ(rules->domains.size(), 9u) << "example4_shallow/ is a directory: not read";
  for (const char* domain : {"mongo_cps", "messaging", "edge_proxy_per_ip", "example4", "internal",
                             "example6", "example7", "example8", "example9"}) {
    EXPECT_TRUE(rules->domains.contains(domain)) << domain;
  }
}

TEST(RlsReadmeExamples, Example1EachDatabaseValueHasItsOwn500PerSecond) {
  Example e("example1_mongo_cps.yaml");
  EXPECT_EQ(e.limit_of("mongo_cps", {{"database", "users"}}),
            (CurrentLimit{"", 500, Unit::kSecond}));
  EXPECT_EQ(e.limit_of("mongo_cps", {{"database", "default"}}),
            (CurrentLimit{"", 500, Unit::kSecond}));
  EXPECT_EQ(e.limit_of("mongo_cps", {{"database", "other"}}), std::nullopt)
      << "no rule for other values";
  // users: 500 this second (one used above), separate from default.
  EXPECT_EQ(e.ask("mongo_cps", {{{"database", "users"}}}, 499).overall_code, Code::kOk);
  EXPECT_EQ(e.ask("mongo_cps", {{{"database", "users"}}}).overall_code, Code::kOverLimit);
  EXPECT_EQ(e.ask("mongo_cps", {{{"database", "default"}}}).overall_code, Code::kOk);
  e.clock->advance(kMicrosPerSecond);
  EXPECT_EQ(e.ask("mongo_cps", {{{"database", "users"}}}).overall_code, Code::kOk);
}

TEST(RlsReadmeExamples, Example2NestedMarketingLimitAndPerNumberLimit) {
  Example e("example2_messaging.yaml");
  EXPECT_EQ(e.limit_of("messaging", {{"message_type", "marketing"}, {"to_number", "2061111111"}}),
            (CurrentLimit{"", 5, Unit::kDay}));
  EXPECT_EQ(e.limit_of("messaging", {{"to_number", "2061111111"}}),
            (CurrentLimit{"", 100, Unit::kDay}));
  EXPECT_EQ(e.limit_of("messaging", {{"message_type", "marketing"}}), std::nullopt)
      << "a placeholder without a limit";
  EXPECT_EQ(e.limit_of("messaging", {{"message_type", "alert"}, {"to_number", "2061111111"}}),
            std::nullopt);

  // Each number gets its own 5 marketing messages a day.
  const std::vector<RlsEntry> marketing_a = {{"message_type", "marketing"},
                                             {"to_number", "2063333333"}};
  const std::vector<RlsEntry> marketing_b = {{"message_type", "marketing"},
                                             {"to_number", "2064444444"}};
  EXPECT_EQ(e.admitted("messaging", {marketing_a}, 10), 5);
  EXPECT_EQ(e.admitted("messaging", {marketing_b}, 10), 5);

  // Both descriptors in one request: the aggregate is OVER_LIMIT when either is.
  const std::vector<RlsEntry> number = {{"to_number", "2065555555"}};
  const std::vector<RlsEntry> marketing = {{"message_type", "marketing"},
                                           {"to_number", "2065555555"}};
  EXPECT_EQ(e.admitted("messaging", {marketing, number}, 10), 5);
  RlsResponse sixth = e.ask("messaging", {marketing, number});
  EXPECT_EQ(sixth.overall_code, Code::kOverLimit);
  EXPECT_EQ(sixth.statuses[0].code, Code::kOverLimit);
  EXPECT_EQ(sixth.statuses[1].code, Code::kOk);
  EXPECT_EQ(sixth.statuses[1].limit_remaining, 95u);
  // The number alone still has 95 of its 100.
  EXPECT_EQ(e.ask("messaging", {number}, 95).overall_code, Code::kOk);
  EXPECT_EQ(e.ask("messaging", {number}).overall_code, Code::kOverLimit);
}

TEST(RlsReadmeExamples, Example3KeyValueBeforeKeyBlocksOneAddress) {
  Example e("example3_edge_proxy_per_ip.yaml");
  EXPECT_EQ(e.admitted("edge_proxy_per_ip", {{{"remote_address", "50.0.0.1"}}}, 20), 10);
  EXPECT_EQ(e.admitted("edge_proxy_per_ip", {{{"remote_address", "50.0.0.2"}}}, 20), 10)
      << "each address its own 10";
  RlsResponse blocked = e.ask("edge_proxy_per_ip", {{{"remote_address", "50.0.0.5"}}});
  EXPECT_EQ(blocked.overall_code, Code::kOverLimit);
  EXPECT_EQ(blocked.statuses[0].current_limit, (CurrentLimit{"", 0, Unit::kSecond}));
  e.clock->advance(10 * kMicrosPerSecond);
  EXPECT_EQ(e.ask("edge_proxy_per_ip", {{{"remote_address", "50.0.0.5"}}}).overall_code,
            Code::kOverLimit)
      << "always";
}

TEST(RlsReadmeExamples, Example4TheRequestDepthMustMatchTheRulesDepth) {
  const std::vector<RlsEntry> two_levels = {{"key", "value"}, {"subkey", "subvalue"}};
  Example shallow("example4_shallow/example4.yaml");
  EXPECT_EQ(shallow.limit_of("example4", two_levels), std::nullopt);
  EXPECT_EQ(shallow.limit_of("example4", {{"key", "value"}}),
            (CurrentLimit{"", 300, Unit::kSecond}));
  Example nested("example4_nested.yaml");
  EXPECT_EQ(nested.limit_of("example4", two_levels), (CurrentLimit{"", 300, Unit::kSecond}));
  EXPECT_EQ(nested.limit_of("example4", {{"key", "value"}}), std::nullopt);
}

TEST(RlsReadmeExamples, Example5UnlimitedIsOkWithMaxRemaining) {
  Example e("example5_internal.yaml");
  for (int i = 0; i < 200; ++i) {
    RlsResponse r = e.ask("internal", {{{"ldap", "cn=" + std::to_string(i % 3)}}});
    ASSERT_EQ(r.overall_code, Code::kOk);
    ASSERT_EQ(r.statuses[0].limit_remaining, 4294967295u);
    ASSERT_FALSE(r.statuses[0].current_limit.has_value());
  }
  EXPECT_EQ(e.limit_of("internal", {{"azure", "sub-1"}}), (CurrentLimit{"", 100, Unit::kMinute}));
  EXPECT_EQ(e.admitted("internal", {{{"azure", "sub-2"}}}, 150), 100);
  EXPECT_EQ(e.store->size(), 2u) << "the unlimited descriptor has no counter";
}

TEST(RlsReadmeExamples, Example6ShadowModeUserIsNeverLimitedButCounted) {
  Example e("example6_shadow.yaml");
  const std::vector<RlsEntry> user_a = {{"service", "auth-service"}, {"user", "user-a"}};
  const std::vector<RlsEntry> user_b = {{"service", "auth-service"}, {"user", "user-b"}};
  EXPECT_EQ(e.admitted("example6", {user_a}, 30), 30);
  EXPECT_EQ(e.engine->stats().get("example6", "service.user_user-a", Stat::kShadowMode), 20u);
  EXPECT_EQ(e.engine->stats().get("example6", "service.user_user-a", Stat::kOverLimit), 20u);
  EXPECT_EQ(e.admitted("example6", {user_b}, 30), 20);
}

TEST(RlsReadmeExamples, Example7ReplacesUsesTheReplacingLimitAndLeavesTheOriginal) {
  Example e("example7_replaces.yaml");
  const std::vector<RlsEntry> one = {{"key_1", "value_1"}, {"user", "bkthomps"}};
  const std::vector<RlsEntry> two = {{"key_2", "value_2"}, {"user", "bkthomps"}};
  EXPECT_EQ(e.limit_of("example7", one), (CurrentLimit{"specific_limit", 5, Unit::kSecond}));
  EXPECT_EQ(e.limit_of("example7", two), (CurrentLimit{"", 10, Unit::kSecond}));
  e.clock->advance(kMicrosPerSecond);

  // Both in one request: 10 per second, and key_1's 5 untouched.
  EXPECT_EQ(e.admitted("example7", {one, two}, 20), 10);
  RlsResponse r = e.ask("example7", {one, two});
  EXPECT_EQ(r.overall_code, Code::kOverLimit);
  EXPECT_FALSE(r.statuses[0].current_limit.has_value()) << "replaced";
  EXPECT_EQ(e.admitted("example7", {one}, 20), 5) << "the original limit was not affected";
}

TEST(RlsReadmeExamples, Example8DetailedMetricLabelsUnlistedValues) {
  Example e("example8_detailed_metric.yaml");
  e.ask("example8", {{{"key1", "unspecified_value"}}});
  e.ask("example8", {{{"key1", "unspecified_value2"}}});
  e.ask("example8", {{{"key1", "value1"}}});
  EXPECT_EQ(e.engine->stats().get("example8", "key1_unspecified_value", Stat::kTotalHits), 1u);
  EXPECT_EQ(e.engine->stats().get("example8", "key1_unspecified_value2", Stat::kTotalHits), 1u);
  EXPECT_EQ(e.engine->stats().get("example8", "key1_value1", Stat::kTotalHits), 1u);
  EXPECT_EQ(e.engine->stats().get("example8", "key1", Stat::kTotalHits), 0u);
  EXPECT_EQ(e.limit_of("example8", {{"key1", "value1"}}), (CurrentLimit{"", 20, Unit::kMinute}));
  EXPECT_EQ(e.limit_of("example8", {{"key1", "x"}}), (CurrentLimit{"", 10, Unit::kMinute}));
}

TEST(RlsReadmeExamples, Example9WildcardGivesEachMatchingValueItsOwnLimit) {
  Example e("example9_wildcard.yaml");
  EXPECT_EQ(e.admitted("example9", {{{"key1", "value_1"}}}, 30), 20);
  EXPECT_EQ(e.admitted("example9", {{{"key1", "value_2"}}}, 30), 20);
  EXPECT_EQ(e.limit_of("example9", {{"key1", "other"}}), std::nullopt);
}

}  // namespace
}  // namespace spillway::rls
