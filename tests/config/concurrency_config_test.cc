// Concurrency layers as the config file writes them (docs/SPEC.md §2.5, §7): `algorithm:
// concurrency` with `limit: N` and `hold_ttl` read into the policy and built as
// Limit::concurrency, and every way to get one wrong refused with an error that names the field
// and the reason, when the file is read and by Policy::make alike.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "src/core/wait_for_answer.h"

namespace spillway::policy {
namespace {

std::string concurrency_layer(const std::string& fields) {
  return "layers:\n  - name: in_flight\n    key: [api_key]\n    algorithm: concurrency\n" + fields;
}

TEST(ConcurrencyConfig, ALayerIsReadAndBuiltAsAConcurrencyLimit) {
  Result<Config> config = parse_config(concurrency_layer("    limit: 20\n    hold_ttl: 30s\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const LayerSpec& layer = config->policy.layers[0];
  ASSERT_TRUE(layer.is_concurrency());
  EXPECT_EQ(*layer.hold_ttl, 30 * kMicrosPerSecond);
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  EXPECT_TRUE((*policy)->has_concurrency());
  auto checks = (*policy)->resolve({{"api_key", "k"}, {"cost", "5"}});
  ASSERT_TRUE(checks.has_value()) << checks.error().message;
  const Policy::Check& check = checks->front();
  EXPECT_TRUE(check.limit->is_concurrency());
  EXPECT_EQ(check.limit->limit(), 20);
  EXPECT_EQ(check.limit->period(), 30 * kMicrosPerSecond);
  EXPECT_EQ(check.cost, 1) << "a request holds one slot, whatever its cost";
  EXPECT_EQ(check.limit->describe(), "concurrency 20 hold_ttl 30s");

  Result<Config> defaulted = parse_config(concurrency_layer("    limit: 3\n"));
  ASSERT_TRUE(defaulted.has_value()) << defaulted.error().message;
  EXPECT_EQ(*defaulted->policy.layers[0].hold_ttl, 60 * kMicrosPerSecond);
}

TEST(ConcurrencyConfig, WhatAConcurrencyLayerCannotHaveIsRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"    limit: 20/min\n", "not a rate"},
      {"    limit: 0\n", "limit"},
      {"    hold_ttl: 1m\n", "needs limit"},
      {"    limit: 2\n    hold_ttl: 0ms\n", "hold_ttl"},
      {"    limit: 2\n    hold_ttl: 2d\n", "hold_ttl must be from 1ms to 1d"},
      {"    limit: 2\n    burst: 4\n", "burst does not apply to algorithm: concurrency"},
      {"    limit: 2\n    max_delay: 1s\n", "cannot delay"},
      {"    limit: 2\n    mode: shadow\n", "cannot be a shadow"},
      {"    limit: 2\n    sync: lease\n", "cannot be leased"},
      {"    limit: 2\n    cost: tokens\n", "takes no cost attribute"},
      {"    by_plan:\n      attribute: plan\n      default: free\n      plans: {free: 2/min}\n",
       "by_plan does not apply to algorithm: concurrency"},
  };
  for (const auto& [fields, expected] : cases) {
    Result<Config> config = parse_config(concurrency_layer(fields));
    ASSERT_FALSE(config.has_value()) << fields;
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << fields << "\n -> " << config.error().message;
    EXPECT_NE(config.error().message.find("line "), std::string::npos) << config.error().message;
  }
  // A limit that is there but wrong is that one error, not also a missing limit.
  Result<Config> twenty = parse_config(concurrency_layer("    limit: twenty\n"));
  ASSERT_FALSE(twenty.has_value());
  EXPECT_EQ(twenty.error().message.find("needs limit"), std::string::npos)
      << twenty.error().message;
  Result<Config> unknown = parse_config(
      "layers:\n  - name: api\n    key: [api_key]\n    algorithm: gcr\n    limit: 5/min\n");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("gcra, or concurrency for requests in flight)"),
            std::string::npos)
      << unknown.error().message;
  Result<Config> rate = parse_config(
      "layers:\n  - name: api\n    key: [api_key]\n    limit: 5/min\n    hold_ttl: 1m\n");
  ASSERT_FALSE(rate.has_value());
  EXPECT_NE(rate.error().message.find("hold_ttl applies only to algorithm: concurrency"),
            std::string::npos)
      << rate.error().message;
}

TEST(ConcurrencyConfig, PolicyMakeRefusesWhatTheFileWouldHave) {
  LayerSpec layer{.name = "in_flight",
                  .key = {"api_key"},
                  .algorithm = Algorithm::kSlidingLog,
                  .mode = LayerMode::kShadow,
                  .hold_ttl = kMicrosPerMinute,
                  .limit = RateSpec{.limit = 2, .period = kMicrosPerMinute}};
  auto shadow = Policy::make(PolicySpec{.layers = {layer}});
  ASSERT_FALSE(shadow.has_value());
  EXPECT_EQ(shadow.error().field, "mode");
  layer.mode = LayerMode::kEnforce;
  layer.cost = "tokens";
  auto costed = Policy::make(PolicySpec{.layers = {layer}});
  ASSERT_FALSE(costed.has_value());
  EXPECT_EQ(costed.error().field, "cost");
  layer.cost.clear();
  EXPECT_TRUE(Policy::make(PolicySpec{.layers = {layer}}).has_value());
}

// A peek (cost 0 everywhere) holds nothing; a request of cost 0 that another layer charges by its
// own cost attribute is no peek, and holds its slot.
TEST(ConcurrencyConfig, OnlyATruePeekHoldsNothing) {
  Result<Config> config = parse_config(
      "layers:\n  - name: tpm\n    key: [api_key]\n    cost: tokens\n    limit: 1000/1h\n"
      "  - name: in_flight\n    key: [api_key]\n    algorithm: concurrency\n    limit: 1\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  Result<PolicyDecision> peek = (*policy)->decide(store, {{"api_key", "k"}, {"tokens", "0"}}, 0);
  ASSERT_TRUE(peek.has_value()) << peek.error().message;
  EXPECT_TRUE(peek->allowed);
  EXPECT_TRUE(peek->reservation.empty()) << "a peek holds nothing";
  Result<PolicyDecision> held = (*policy)->decide(store, {{"api_key", "k"}, {"tokens", "5"}}, 0);
  ASSERT_TRUE(held.has_value()) << held.error().message;
  EXPECT_TRUE(held->allowed);
  EXPECT_FALSE(held->reservation.empty()) << "charged 5 tokens: it holds its slot";
  Result<PolicyDecision> full = (*policy)->decide(store, {{"api_key", "k"}, {"tokens", "5"}}, 0);
  ASSERT_TRUE(full.has_value());
  EXPECT_FALSE(full->allowed);
  EXPECT_EQ(full->denied_by, "in_flight");
  // A peek kept as a reservation ("reserve": true, cost 0): no commit's cost is charged to the
  // slot (it is a hold in the record), so the key stays free.
  Result<PolicyDecision> peeked =
      (*policy)->reserve(store, {{"api_key", "k3"}, {"tokens", "0"}}, 0, std::chrono::minutes(1));
  ASSERT_TRUE(peeked.has_value()) << peeked.error().message;
  ASSERT_FALSE(peeked->reservation.empty());
  EXPECT_EQ(peeked->hold_expires, 0) << "a peek holds nothing";
  Result<Settled> committed = store.settle_and_wait({.id = peeked->reservation, .cost = 5});
  ASSERT_TRUE(committed.has_value()) << committed.error().message;
  Result<PolicyDecision> free_slot =
      (*policy)->decide(store, {{"api_key", "k3"}, {"tokens", "1"}}, 0);
  ASSERT_TRUE(free_slot.has_value());
  EXPECT_TRUE(free_slot->allowed) << "the commit's cost was charged to the slot";
  // A front end with no release step is refused before anything is charged.
  auto refused = wait_for_answer<Result<PolicyDecision>>([&](auto answer) {
    (*policy)->decide_async(store, {{"api_key", "k2"}, {"tokens", "5"}}, 1, std::nullopt,
                            std::move(answer), /*holds_allowed=*/false);
  });
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().field, kHoldsRefused);
  Result<PolicyDecision> after = (*policy)->decide(store, {{"api_key", "k2"}, {"tokens", "0"}}, 0);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->layers.at(0).decision.remaining, 1000) << "nothing charged";
}

// A shadow layer's own cost does not make a request of cost 0 more than a peek: a shadow layer
// never changes what is enforced.
TEST(ConcurrencyConfig, AShadowLayersCostDoesNotTakeASlot) {
  Result<Config> config = parse_config(
      "layers:\n  - name: trial\n    key: [api_key]\n    cost: tokens\n    mode: shadow\n"
      "    limit: 1000/1h\n"
      "  - name: in_flight\n    key: [api_key]\n    algorithm: concurrency\n    limit: 1\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  for (int i = 0; i < 3; ++i) {
    Result<PolicyDecision> peek = (*policy)->decide(store, {{"api_key", "k"}, {"tokens", "5"}}, 0);
    ASSERT_TRUE(peek.has_value()) << peek.error().message;
    EXPECT_TRUE(peek->allowed) << i;
    EXPECT_TRUE(peek->reservation.empty()) << i;
  }
}

TEST(ConcurrencyLimit, TheFactoryChecksItsNumbers) {
  EXPECT_FALSE(Limit::concurrency(0, kMicrosPerMinute).has_value());
  EXPECT_FALSE(Limit::concurrency(5, 999).has_value());
  EXPECT_FALSE(Limit::concurrency(5, 25 * kMicrosPerHour).has_value());
  Result<Limit> made = Limit::concurrency(5, kMicrosPerMinute);
  ASSERT_TRUE(made.has_value());
  EXPECT_EQ(made->kind(), LimitKind::kConcurrency);
  EXPECT_FALSE(made->with_max_delay(1000).has_value());
  Result<Limit> kept = made->with_reserved(2);
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->is_concurrency());
  EXPECT_EQ(kept->admit_capacity(), 3);
  // Not the rate with the same numbers: the over-limit cache keeps them apart.
  EXPECT_NE(*made, *Limit::make(Algorithm::kSlidingLog, 5, kMicrosPerMinute));
}

}  // namespace
}  // namespace spillway::policy
