// Layers that take their cost from a request attribute (`cost: tokens`): one request charges its
// requests-per-minute layer 1 and its tokens-per-minute layer what it uses, all-or-nothing, on
// every backend; bad cost values are refused naming the attribute and change nothing.
#include <gtest/gtest.h>

#include <atomic>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "spillway/redis_store.h"
#include "tests/support/llm_policy.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway::policy {
namespace {

// rpm: 3 requests a minute per API key; tpm: 1,000 tokens a minute per API key, its cost the
// `tokens` attribute.
PolicySpec llm_spec() {
  PolicySpec spec;
  spec.layers = testing::llm_layers(3, 1'000);
  return spec;
}

class LayerCharges : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> make() {
    if (GetParam() == "memory") return std::make_unique<MemoryStore>();
    static std::atomic<int> counter{0};
    const std::string prefix = "cost" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    if (GetParam() == "cluster") {
      return std::move(
          *RedisStore::open({.url = testing::shared_cluster().url(), .key_prefix = prefix}));
    }
    static testing::RedisServer* server = new testing::RedisServer();
    return std::move(*RedisStore::open({.url = server->url(), .key_prefix = prefix}));
  }
};

Attributes call(const std::string& tokens) { return {{"api_key", "k1"}, {"tokens", tokens}}; }

TEST_P(LayerCharges, EachLayerIsChargedWhatItCounts) {
  auto store = make();
  auto policy = Policy::make(llm_spec());
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  const Micros now = 5'000'000;
  auto first = (*policy)->decide(*store, call("600"), 1, now);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_TRUE(first->allowed);
  ASSERT_EQ(first->layers.size(), 2u);
  EXPECT_EQ(first->layers[0].decision.remaining, 2);
  EXPECT_EQ(first->layers[1].decision.remaining, 400);
  // 600 more tokens do not fit: the token layer denies, and the request layer is not charged.
  auto denied = (*policy)->decide(*store, call("600"), 1, now);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->denied_by, "tpm");
  EXPECT_EQ(denied->layers[0].decision.remaining, 2);
  auto fits = (*policy)->decide(*store, call("400"), 1, now);
  ASSERT_TRUE(fits.has_value());
  EXPECT_TRUE(fits->allowed);
  EXPECT_EQ(fits->layers[0].decision.remaining, 1);
  EXPECT_EQ(fits->layers[1].decision.remaining, 0);
  // A request that uses no tokens still counts as a request.
  auto zero = (*policy)->decide(*store, call("0"), 1, now);
  ASSERT_TRUE(zero.has_value());
  EXPECT_TRUE(zero->allowed);
  EXPECT_EQ(zero->layers[0].decision.remaining, 0);
}

TEST_P(LayerCharges, BadCostsAreRefusedNamingTheAttributeAndChargeNothing) {
  auto store = make();
  auto policy = Policy::make(llm_spec());
  ASSERT_TRUE(policy.has_value());
  const Micros now = 5'000'000;
  for (const char* bad :
       {"-1", "1.5", "12a", " 12", "0x10", "4503599627370497", "99999999999999999999"}) {
    auto refused = (*policy)->decide(*store, call(bad), 1, now);
    ASSERT_FALSE(refused.has_value()) << bad;
    EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
    EXPECT_EQ(refused.error().field, "tokens") << bad;
    EXPECT_NE(refused.error().message.find("layer tpm"), std::string::npos)
        << refused.error().message;
  }
  auto missing = (*policy)->decide(*store, {{"api_key", "k1"}}, 1, now);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().field, "tokens");
  // Nothing was charged: all three requests of the minute are left, and all 1,000 tokens.
  auto peek = (*policy)->decide(*store, call("0"), 0, now);
  ASSERT_TRUE(peek.has_value());
  EXPECT_EQ(peek->layers[0].decision.remaining, 3);
  EXPECT_EQ(peek->layers[1].decision.remaining, 1'000);
}

INSTANTIATE_TEST_SUITE_P(Backends, LayerCharges, ::testing::Values("memory", "redis", "cluster"));

TEST(LayerCostPolicy, AShadowLayerWithoutItsCostDoesNotApply) {
  PolicySpec spec = llm_spec();
  spec.layers[1].mode = LayerMode::kShadow;
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy.has_value());
  MemoryStore store;
  auto d = (*policy)->decide(store, {{"api_key", "k1"}}, 1, 1'000);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->layers.size(), 1u);
}

TEST(LayerCostPolicy, ABadCostAttributeNameIsRefused) {
  PolicySpec spec = llm_spec();
  spec.layers[1].cost = "to:kens";
  auto policy = Policy::make(spec);
  ASSERT_FALSE(policy.has_value());
  EXPECT_NE(policy.error().message.find("cost attribute"), std::string::npos)
      << policy.error().message;
}

TEST(LayerCostPolicy, TheCostAttributeIsOneOfTheAttributesUsed) {
  auto policy = Policy::make(llm_spec());
  ASSERT_TRUE(policy.has_value());
  EXPECT_EQ((*policy)->cost_attributes(), std::vector<std::string>{"tokens"});
  const auto& used = (*policy)->attributes_used();
  EXPECT_NE(std::find(used.begin(), used.end(), "tokens"), used.end());
}

}  // namespace
}  // namespace spillway::policy
