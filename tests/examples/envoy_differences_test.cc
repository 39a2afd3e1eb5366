// The table "What is different, on purpose" of docs/envoy.md states what a drop-in user
// of envoyproxy/ratelimit sees in the answers. These tests hold spillway to those rows:
//   - a denied descriptor reports the units truly left (envoyproxy/ratelimit reports 0);
//   - a descriptor left uncharged in a denied request is reported as it stands: its units left
//     and the time until its counter is empty again, 0 s when nothing is counted in its window
//     (envoyproxy/ratelimit charges it and reports the window's end).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "src/rls/rls_engine.h"

namespace spillway::rls {
namespace {

constexpr Micros kStart = 19'676 * kMicrosPerDay;  // a minute starts here

constexpr std::string_view kRules = R"(domain: differences
descriptors:
  - key: wide
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: narrow
    rate_limit: {unit: minute, requests_per_unit: 1}
)";

struct Engine {
  Engine() : clock(std::make_shared<ManualClock>(kStart)) {
    Result<DomainRules> domain = parse_rls_yaml(kRules, "differences.yaml");
    EXPECT_TRUE(domain.has_value()) << domain.error().message;
    RlsRules rules;
    if (domain) rules.domains.emplace(domain->domain, std::move(*domain));
    store = std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock});
    engine = std::make_unique<RlsEngine>(*store, std::make_shared<const RlsRules>(std::move(rules)),
                                         RlsOptions{.clock = clock});
  }
  // One request; each descriptor is {key, value} with the request's hits_addend.
  RlsResponse ask(const std::vector<RlsEntry>& descriptors, std::uint32_t hits = 1) {
    RlsRequest request{.domain = "differences", .hits_addend = hits};
    for (const RlsEntry& entry : descriptors) request.descriptors.push_back({.entries = {entry}});
    std::optional<Result<RlsResponse>> out;
    engine->should_rate_limit(request, [&](Result<RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    return out && *out ? **out : RlsResponse{};
  }
  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<MemoryStore> store;
  std::unique_ptr<RlsEngine> engine;
};

TEST(EnvoyDifferences, ADenialReportsTheUnitsTrulyLeft) {
  Engine e;
  e.clock->advance(15 * kMicrosPerSecond);
  RlsResponse first = e.ask({{"wide", "w"}}, 8);
  EXPECT_EQ(first.overall_code, Code::kOk);
  EXPECT_EQ(first.statuses.at(0).limit_remaining, 2u);

  RlsResponse denied = e.ask({{"wide", "w"}}, 5);  // 5 > the 2 left
  EXPECT_EQ(denied.overall_code, Code::kOverLimit);
  EXPECT_EQ(denied.statuses.at(0).code, Code::kOverLimit);
  EXPECT_EQ(denied.statuses.at(0).limit_remaining, 2u) << "envoyproxy/ratelimit reports 0";
  EXPECT_EQ(denied.statuses.at(0).duration_until_reset, 45 * kMicrosPerSecond)
      << "until the window ends";
  // And the 2 are really there: a request of 2 is admitted.
  EXPECT_EQ(e.ask({{"wide", "w"}}, 2).overall_code, Code::kOk);
}

TEST(EnvoyDifferences, AnUnchargedDescriptorWithNothingCountedReportsZeroUntilReset) {
  Engine e;
  e.clock->advance(20 * kMicrosPerSecond);
  ASSERT_EQ(e.ask({{"narrow", "n"}}).overall_code, Code::kOk);  // narrow's 1 is spent

  RlsResponse denied = e.ask({{"wide", "fresh"}, {"narrow", "n"}});
  EXPECT_EQ(denied.overall_code, Code::kOverLimit);
  EXPECT_EQ(denied.statuses.at(1).code, Code::kOverLimit);
  EXPECT_EQ(denied.statuses.at(0).code, Code::kOk);
  EXPECT_EQ(denied.statuses.at(0).limit_remaining, 10u) << "not charged";
  EXPECT_EQ(denied.statuses.at(0).duration_until_reset, 0)
      << "nothing counted: envoyproxy/ratelimit charges it and reports the window's end (40 s)";
}

TEST(EnvoyDifferences, AnUnchargedDescriptorWithACountReportsItsWindowEnd) {
  Engine e;
  e.clock->advance(20 * kMicrosPerSecond);
  ASSERT_EQ(e.ask({{"wide", "used"}}, 3).overall_code, Code::kOk);
  ASSERT_EQ(e.ask({{"narrow", "n"}}).overall_code, Code::kOk);

  RlsResponse denied = e.ask({{"wide", "used"}, {"narrow", "n"}});
  EXPECT_EQ(denied.overall_code, Code::kOverLimit);
  EXPECT_EQ(denied.statuses.at(0).limit_remaining, 7u) << "as it stands: not charged again";
  EXPECT_EQ(denied.statuses.at(0).duration_until_reset, 40 * kMicrosPerSecond);
}

}  // namespace
}  // namespace spillway::rls
