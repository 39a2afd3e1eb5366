// Chains of answers that come at once: a caller that issues its next check from inside the
// callback of the previous one. Each store that can answer on the caller's stack (the memory
// store, an open circuit breaker, invalid input to Redis, a cached denial) must let the chain run
// 1,000,000 long without growing the stack (src/core/inline_completion.h): every answer arrives,
// in order, and the stack under the callbacks stays within a few KiB however long the chain is.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "spillway/circuit_breaker.h"
#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"
#include "spillway/redis_store.h"
#include "src/core/inline_completion.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kChain = 1'000'000;
// Far below what 1,000,000 nested frames take (tens of MiB); far above one frame's needs.
constexpr std::uintptr_t kMaxStackSpread = 256 * 1024;

// Runs a chain of `kChain` single checks from one top-level call: each callback records its
// answer and issues the next. `expect` says whether an answer is the one the store must give.
struct Chain {
  Store& store;
  std::string key;
  const Limit& limit;
  std::function<bool(const Result<Decision>&)> expect;

  std::int64_t issued = 0;
  std::int64_t answered = 0;
  std::int64_t out_of_order = 0;
  std::int64_t unexpected = 0;
  std::uintptr_t lowest = UINTPTR_MAX, highest = 0;  // stack addresses seen in callbacks

  void next() {
    const std::int64_t number = issued++;
    store.check_async(key, limit, 1, std::nullopt, [this, number](Result<Decision> answer) {
      int marker = 0;  // its address: how deep the stack is here
      const auto at = reinterpret_cast<std::uintptr_t>(&marker);
      lowest = std::min(lowest, at);
      highest = std::max(highest, at);
      if (number != answered) ++out_of_order;
      ++answered;
      if (!expect(answer)) ++unexpected;
      if (issued < kChain) next();
    });
  }

  void run_and_check() {
    next();
    EXPECT_EQ(answered, kChain);
    EXPECT_EQ(out_of_order, 0);
    EXPECT_EQ(unexpected, 0);
    EXPECT_LT(highest - lowest, kMaxStackSpread) << "the chain grew the stack";
    EXPECT_FALSE(in_inline_completion()) << "the inline frame was left open";
  }
};

bool is_decision(const Result<Decision>& r) { return r.has_value(); }

TEST(InlineChain, MemoryStoreAnswersAMillionChainedChecksInOrder) {
  MemoryStore store;
  const Limit limit = *Limit::make(Algorithm::kFixedWindow, 500'000, 3600 * kMicrosPerSecond);
  std::int64_t admitted = 0;
  Chain chain{store, "chained", limit, [&](const Result<Decision>& r) {
                if (r && r->allowed) ++admitted;
                return is_decision(r);
              }};
  chain.run_and_check();
  EXPECT_EQ(admitted, 500'000) << "every check must be a real decision of the one key";
}

TEST(InlineChain, OpenCircuitBreakerAnswersAMillionChainedChecksInOrder) {
  testing::RedisServer redis;
  const std::string url = redis.url();
  redis.stop();  // its port stays reserved and refuses connections
  auto inner = RedisStore::open({.url = url, .key_prefix = "chain", .timeout = 300ms});
  ASSERT_TRUE(inner.has_value()) << inner.error().message;
  CircuitBreakerStore store(std::move(*inner), {.failures = 1, .probe_interval = 1h});
  const Limit limit = *Limit::make(Algorithm::kGcra, 100, kMicrosPerSecond);
  ASSERT_FALSE(store.check("k", limit).has_value());
  ASSERT_TRUE(store.open());
  Chain chain{store, "k", limit, [](const Result<Decision>& r) {
                return !r && r.error().message.find("circuit open") != std::string::npos;
              }};
  chain.run_and_check();
}

TEST(InlineChain, RedisInvalidInputAnswersAMillionChainedChecksInOrder) {
  testing::RedisServer redis;
  auto store = RedisStore::open({.url = redis.url(), .key_prefix = "chain"});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const Limit limit = *Limit::make(Algorithm::kGcra, 100, kMicrosPerSecond);
  Chain chain{**store, "", limit, [](const Result<Decision>& r) {
                return !r && r.error().code == Errc::kInvalidArgument;
              }};
  chain.run_and_check();
  // The synchronous form answers invalid input too, also from inside an inline callback (it
  // must not wait on an answer queued behind the running one).
  bool answered = false;
  MemoryStore memory;
  memory.check_async("x", limit, 1, std::nullopt,
                     [&](Result<Decision>) { answered = !(*store)->check("", limit).has_value(); });
  EXPECT_TRUE(answered);
}

TEST(InlineChain, CachedDenialsAnswerAMillionChainedChecksInOrder) {
  testing::RedisServer redis;
  auto inner = RedisStore::open({.url = redis.url(), .key_prefix = "chain"});
  ASSERT_TRUE(inner.has_value()) << inner.error().message;
  OverLimitCache store(std::move(*inner), 100);
  const Limit limit = *Limit::make(Algorithm::kFixedWindow, 1, 3600 * kMicrosPerSecond);
  const Result<Decision> first = store.check("k", limit);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_TRUE(first->allowed);
  const Result<Decision> second = store.check("k", limit);  // remembered from now on
  ASSERT_TRUE(second.has_value()) << second.error().message;
  ASSERT_FALSE(second->allowed);
  Chain chain{store, "k", limit,
              [](const Result<Decision>& r) { return r && !r->allowed && r->local; }};
  chain.run_and_check();
}

// Outside any inline answer, an answer that is ready at once still comes before check_async
// returns (callers that wait for it on their own thread rely on that).
TEST(InlineChain, ATopLevelInlineAnswerComesBeforeCheckAsyncReturns) {
  MemoryStore store;
  const Limit limit = *Limit::make(Algorithm::kGcra, 10, kMicrosPerSecond);
  bool answered = false;
  store.check_async("k", limit, 1, std::nullopt,
                    [&](Result<Decision> r) { answered = r.has_value(); });
  EXPECT_TRUE(answered);
  // Nested: after the running callback, in order.
  std::vector<int> order;
  store.check_async("k", limit, 1, std::nullopt, [&](Result<Decision>) {
    order.push_back(1);
    store.check_async("k", limit, 1, std::nullopt, [&](Result<Decision>) { order.push_back(3); });
    store.check_all_async(std::vector<KeyedLimit>{{"k", &limit}}, 1, std::nullopt,
                          [&](Result<Decisions>) { order.push_back(4); });
    order.push_back(2);
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace spillway
