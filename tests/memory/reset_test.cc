// Operation::kReset on the memory store and through the over-limit cache: a key's state is
// forgotten (its next check finds it fresh), each decision says whether there was state, the same
// key under another limit and other keys are untouched, and a remembered denial is forgotten too.
#include <gtest/gtest.h>

#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"

namespace spillway {
namespace {

constexpr Micros kResetNow = 1'000'000'000;

Result<Decisions> reset(Store& store, std::vector<KeyedLimit> keys) {
  auto request = StoreRequest::make(keys, 0, std::nullopt, Operation::kReset);
  EXPECT_TRUE(request.has_value());
  return store.decide_and_wait(*request);
}

class MemoryReset : public ::testing::TestWithParam<Algorithm> {};

TEST_P(MemoryReset, ForgetsAKeysStateAndSaysWhetherItHadOne) {
  MemoryStore store;
  const Limit limit = *Limit::make(GetParam(), 3, kMicrosPerMinute);
  const Limit other = *Limit::make(GetParam(), 5, kMicrosPerMinute);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.check("k", limit, 1, kResetNow)->allowed);
  ASSERT_FALSE(store.check("k", limit, 1, kResetNow)->allowed);
  ASSERT_TRUE(store.check("k", other, 1, kResetNow)->allowed);
  ASSERT_TRUE(store.check("j", limit, 3, kResetNow)->allowed);

  auto done = reset(store, {{"k", &limit}, {"absent", &limit}});
  ASSERT_TRUE(done.has_value()) << done.error().message;
  ASSERT_EQ(done->size(), 2u);
  EXPECT_TRUE((*done)[0].allowed);
  EXPECT_EQ((*done)[0].limit, 3);
  EXPECT_FALSE((*done)[1].allowed);

  auto fresh = store.check("k", limit, 0, kResetNow);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->remaining, 3);                                  // as an absent key
  EXPECT_EQ(store.check("k", other, 0, kResetNow)->remaining, 4);  // another limit: untouched
  EXPECT_EQ(store.check("j", limit, 0, kResetNow)->remaining, 0);  // another key: untouched
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(store.check("k", limit, 1, kResetNow)->allowed);
  EXPECT_FALSE(store.check("k", limit, 1, kResetNow)->allowed);
  // A reset state is idle: the sweep drops it.
  ASSERT_TRUE(reset(store, {{"k", &limit}}).has_value());
  const std::size_t before = store.size();
  EXPECT_GE(store.sweep(kResetNow), 1u);
  EXPECT_LT(store.size(), before);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, MemoryReset, ::testing::ValuesIn(kAlgorithms),
                         [](const auto& p) { return std::string(algorithm_name(p.param)); });

TEST(OverLimitCacheReset, ARememberedDenialIsForgottenWithTheCounters) {
  auto clock = std::make_shared<ManualClock>(kResetNow);
  auto inner = std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock});
  OverLimitCache cache(std::move(inner), 100, clock);
  const Limit limit = *Limit::make(Algorithm::kGcra, 2, kMicrosPerMinute);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.check("k", limit)->allowed);
  ASSERT_FALSE(cache.check("k", limit)->allowed);
  ASSERT_EQ(cache.entries(), 1u);  // the denial is remembered
  auto done = reset(cache, {{"k", &limit}});
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE((*done)[0].allowed);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_TRUE(cache.check("k", limit)->allowed);  // not answered by a stale denial
}

}  // namespace
}  // namespace spillway
