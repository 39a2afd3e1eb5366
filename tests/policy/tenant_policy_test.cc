// by_plan layers with `source: store` (docs/SPEC.md §5.2): a tenant record's plan wins over the
// file's, a custom rate applies to its layer only, a blocked caller is denied by that layer with
// nothing charged, a plan the layer lacks leaves the file's choice, layers with source: file
// ignore records, and a change applies to the next request.
#include <gtest/gtest.h>

#include <set>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/memory/tenant_file.h"

namespace spillway::policy {
namespace {

constexpr Micros kNow = 1'000'000'000;

PolicySpec spec(PlanSource source) {
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = RateSpec{100, kMicrosPerMinute}});
  spec.layers.push_back({.name = "gateway",
                         .key = {"api_key"},
                         .by_plan = PlanSelector{.attribute = "api_key",
                                                 .plans = {{"free", {2, kMicrosPerMinute}},
                                                           {"pro", {5, kMicrosPerMinute}}},
                                                 .default_plan = "free",
                                                 .assignments = {{"file-pro", "pro"}},
                                                 .source = source}});
  return spec;
}

class TenantPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    auto directory = FileTenantDirectory::open("", {});
    ASSERT_TRUE(directory.has_value());
    tenants_ = std::move(*directory);
    auto made = Policy::make(spec(PlanSource::kStore), tenants_);
    ASSERT_TRUE(made.has_value()) << made.error().message;
    policy_ = *made;
  }
  // How many of `n` requests of `key` are admitted (one IP each, so only the gateway limits).
  int admitted(const std::string& key, int n) {
    int yes = 0;
    for (int i = 0; i < n; ++i) {
      auto d = policy_->decide(
          store_, {{"ip", "10.0.0." + std::to_string(i % 200)}, {"api_key", key}}, 1, kNow);
      EXPECT_TRUE(d.has_value());
      yes += d && d->allowed;
    }
    return yes;
  }
  Result<PolicyDecision> one(const std::string& key, const std::string& ip = "10.1.0.1") {
    return policy_->decide(store_, {{"ip", ip}, {"api_key", key}}, 1, kNow);
  }

  std::shared_ptr<FileTenantDirectory> tenants_;
  std::shared_ptr<const Policy> policy_;
  MemoryStore store_;
};

TEST_F(TenantPolicy, ARecordsPlanWinsOverTheFileAndTheDefault) {
  ASSERT_TRUE(tenants_->put("k-pro", {.plan = "pro"}).has_value());
  ASSERT_TRUE(tenants_->put("file-pro", {.plan = "free"}).has_value());
  EXPECT_EQ(admitted("k-pro", 8), 5);
  EXPECT_EQ(admitted("file-pro", 8), 2);
  EXPECT_EQ(admitted("nobody", 8), 2);
  auto d = one("k-pro");
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->layers.size(), 2u);
  EXPECT_EQ(d->layers[1].plan, "pro");
}

TEST_F(TenantPolicy, WithoutARecordTheFileAssignmentApplies) {
  EXPECT_EQ(admitted("file-pro", 8), 5);
  ASSERT_TRUE(tenants_->put("other", {.plan = "pro"}).has_value());  // records exist, not this one
  EXPECT_EQ(admitted("file-pro", 1), 0);                             // its 5 are used
  auto d = one("file-pro");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->layers[1].plan, "pro");
}

TEST_F(TenantPolicy, ACustomRateAppliesToItsLayerAndSaysCustom) {
  ASSERT_TRUE(
      tenants_->put("contract", {.plan = "free", .limits = {{"gateway", {7, kMicrosPerMinute}}}})
          .has_value());
  EXPECT_EQ(admitted("contract", 10), 7);
  auto d = one("contract");
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->layers[1].plan, kCustomPlan);
  EXPECT_EQ(d->layers[1].decision.limit, 7);
  // A rate for a layer the record names but this policy's gateway does not read: ignored.
  ASSERT_TRUE(
      tenants_->put("edge-only", {.limits = {{"edge", {1, kMicrosPerMinute}}}}).has_value());
  EXPECT_EQ(admitted("edge-only", 4), 2);
}

TEST_F(TenantPolicy, ABlockedCallerIsDeniedByTheLayerAndNothingIsCharged) {
  ASSERT_TRUE(tenants_->put("abuser", {.blocked = true}).has_value());
  for (int i = 0; i < 5; ++i) {
    auto d = one("abuser", "10.9.9.9");
    ASSERT_TRUE(d.has_value());
    EXPECT_FALSE(d->allowed);
    ASSERT_TRUE(d->denied_by.has_value());
    EXPECT_EQ(*d->denied_by, "gateway");
    EXPECT_EQ(d->top.retry_after, kNever);
  }
  // Nothing was charged: neither the edge key of that IP nor the gateway key.
  auto edge = store_.check("edge:8:10.9.9.9", *Limit::make(Algorithm::kGcra, 100, kMicrosPerMinute),
                           0, kNow);
  ASSERT_TRUE(edge.has_value());
  EXPECT_EQ(edge->remaining, 100);
  ASSERT_TRUE(tenants_->erase("abuser").has_value());
  EXPECT_EQ(admitted("abuser", 4), 2);  // the default plan's full budget
}

TEST_F(TenantPolicy, APlanTheLayerDoesNotHaveLeavesTheFilesChoice) {
  ASSERT_TRUE(tenants_->put("file-pro", {.plan = "platinum"}).has_value());
  EXPECT_EQ(admitted("file-pro", 8), 5);
}

TEST_F(TenantPolicy, ChangesApplyToTheNextRequest) {
  EXPECT_EQ(admitted("upgrader", 3), 2);
  ASSERT_TRUE(tenants_->put("upgrader", {.plan = "pro"}).has_value());
  // pro is another limit: its own budget from the next request on.
  EXPECT_EQ(admitted("upgrader", 6), 5);
}

TEST_F(TenantPolicy, LayersWithSourceFileAndPoliciesWithoutADirectoryIgnoreRecords) {
  ASSERT_TRUE(tenants_->put("k", {.blocked = true}).has_value());
  auto file_only = Policy::make(spec(PlanSource::kFile), tenants_);
  ASSERT_TRUE(file_only.has_value());
  auto d = (*file_only)->decide(store_, {{"ip", "10.2.0.1"}, {"api_key", "k"}}, 1, kNow);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allowed);
  auto no_directory = Policy::make(spec(PlanSource::kStore));
  ASSERT_TRUE(no_directory.has_value());
  d = (*no_directory)->decide(store_, {{"ip", "10.2.0.2"}, {"api_key", "k"}}, 1, kNow);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allowed);
}

TEST_F(TenantPolicy, AShadowLayerIsNeverBlocked) {
  PolicySpec shadowed = spec(PlanSource::kStore);
  shadowed.layers[1].mode = LayerMode::kShadow;
  auto made = Policy::make(shadowed, tenants_);
  ASSERT_TRUE(made.has_value());
  ASSERT_TRUE(tenants_->put("k", {.blocked = true}).has_value());
  auto d = (*made)->decide(store_, {{"ip", "10.3.0.1"}, {"api_key", "k"}}, 1, kNow);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allowed);
}

TEST_F(TenantPolicy, KeysOfACallerCoverEveryPlanAndItsOwnRate) {
  auto keys = policy_->keys_of_caller("gateway", "k");
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  ASSERT_EQ(keys->size(), 2u);  // free and pro
  for (const Policy::Check& check : *keys) EXPECT_EQ(check.key, "gateway:1:k");
  EXPECT_NE((*keys)[0].limit->limit(), (*keys)[1].limit->limit());
  ASSERT_TRUE(tenants_->put("k", {.limits = {{"gateway", {9, kMicrosPerMinute}}}}).has_value());
  keys = policy_->keys_of_caller("gateway", "k");
  ASSERT_EQ(keys->size(), 3u);
  EXPECT_EQ(keys->back().limit->limit(), 9);
  // The keys are the ones decisions charge: reset through them, the budget is whole again.
  EXPECT_EQ(admitted("k", 10), 9);
  std::vector<KeyedLimit> forget;
  for (const Policy::Check& check : *keys) forget.push_back({check.key, check.limit});
  ASSERT_TRUE(
      store_.decide_and_wait(*StoreRequest::make(forget, 0, std::nullopt, Operation::kReset))
          .has_value());
  EXPECT_EQ(admitted("k", 10), 9);
  auto edge = policy_->keys_of_caller("edge", "10.0.0.1");
  ASSERT_TRUE(edge.has_value());
  ASSERT_EQ(edge->size(), 1u);
  EXPECT_EQ(edge->front().key, "edge:8:10.0.0.1");
}

TEST_F(TenantPolicy, KeysOfACallerNeedALayerKeyedByOneCallerAttribute) {
  auto unknown = policy_->keys_of_caller("nope", "k");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().field, "layer");
  EXPECT_NE(unknown.error().message.find("(edge, gateway)"), std::string::npos);
  PolicySpec two = spec(PlanSource::kStore);
  two.layers[0].key = {"ip", "api_key"};
  auto made = Policy::make(two, tenants_);
  ASSERT_TRUE(made.has_value());
  auto refused = (*made)->keys_of_caller("edge", "k");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("2 caller attributes"), std::string::npos);
  // Routes: one key per route, the route as written in the key.
  PolicySpec routed = spec(PlanSource::kStore);
  routed.layers.push_back(
      {.name = "endpoint",
       .key = {"api_key", "endpoint"},
       .by_endpoint = EndpointSelector{.limits = {{"/search", {10, kMicrosPerMinute}},
                                                  {"/orders/{id}", {5, kMicrosPerMinute}}}}});
  auto with_routes = Policy::make(routed, tenants_);
  ASSERT_TRUE(with_routes.has_value()) << with_routes.error().message;
  auto keys = (*with_routes)->keys_of_caller("endpoint", "k");
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  ASSERT_EQ(keys->size(), 2u);
  std::set<std::string> names;
  for (const Policy::Check& check : *keys) names.insert(check.key);
  EXPECT_TRUE(names.contains("endpoint:1:k:7:/search"));
  EXPECT_TRUE(names.contains("endpoint:1:k:12:/orders/{id}"));
}

}  // namespace
}  // namespace spillway::policy
