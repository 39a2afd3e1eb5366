// The circuit breaker around a real Redis that stops answering (SIGSTOP): after the threshold,
// checks fail at once with "circuit open" instead of waiting for their timeout; one probe per
// interval; once Redis answers again the probe closes the circuit. Input errors never count.
#include "spillway/circuit_breaker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "spillway/open_store.h"
#include "spillway/redis_store.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock;

std::chrono::milliseconds elapsed_since(SteadyTime::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyTime::now() - start);
}

TEST(CircuitBreaker, OpensAfterTheThresholdAnswersAtOnceAndClosesAfterAProbe) {
  testing::RedisServer redis;
  auto inner = RedisStore::open({.url = redis.url(), .key_prefix = "cb", .timeout = 300ms});
  ASSERT_TRUE(inner.has_value());
  // The probe timer runs on a manual clock: the test moves it past the interval.
  auto clock = std::make_shared<ManualClock>(0);
  CircuitBreakerStore store(std::move(*inner),
                            {.failures = 3, .probe_interval = 1500ms, .clock = clock});
  const Limit limit = *Limit::make(Algorithm::kGcra, 100, kMicrosPerSecond);
  ASSERT_TRUE(store.check("k", limit).has_value());
  EXPECT_EQ(store.status(), "ready");

  redis.pause();
  for (int i = 0; i < 3; ++i) {
    auto failed = store.check("k", limit);
    ASSERT_FALSE(failed.has_value());
    EXPECT_EQ(failed.error().code, Errc::kTimeout) << failed.error().message;
  }
  EXPECT_TRUE(store.open());
  EXPECT_FALSE(store.ready());
  EXPECT_EQ(store.status(), "circuit_open");
  // Open: the answer comes without waiting for the 300 ms timeout.
  const auto started = SteadyTime::now();
  auto refused = store.check("k", limit);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::kUnavailable);
  EXPECT_NE(refused.error().message.find("circuit open"), std::string::npos);
  EXPECT_LT(elapsed_since(started), 250ms) << "an open circuit waited for the backend";
  auto refused_all = store.check_all(std::vector<KeyedLimit>{{"a", &limit}, {"b", &limit}}, 1);
  ASSERT_FALSE(refused_all.has_value());
  EXPECT_NE(refused_all.error().message.find("circuit open"), std::string::npos);

  // Not yet due a moment before the interval ends.
  clock->advance(1499 * kMicrosPerMilli);
  EXPECT_NE(store.check("k", limit).error().message.find("circuit open"), std::string::npos);
  // Still paused when the probe goes: it fails, the circuit stays open for another interval.
  clock->advance(51 * kMicrosPerMilli);
  auto probe = store.check("k", limit);
  ASSERT_FALSE(probe.has_value());
  EXPECT_EQ(probe.error().code, Errc::kTimeout) << "this call was the probe";
  EXPECT_TRUE(store.open());
  EXPECT_NE(store.check("k", limit).error().message.find("circuit open"), std::string::npos);

  // Back: the next probe succeeds and closes the circuit.
  redis.resume();
  clock->advance(1550 * kMicrosPerMilli);
  auto back = store.check("k", limit);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_FALSE(store.open());
  EXPECT_TRUE(store.ready());
  EXPECT_TRUE(store.check("k", limit).has_value());
}

TEST(CircuitBreaker, InputErrorsAndAsyncCallsCountRight) {
  testing::RedisServer redis;
  auto inner = RedisStore::open({.url = redis.url(), .key_prefix = "cb2", .timeout = 300ms});
  ASSERT_TRUE(inner.has_value());
  CircuitBreakerStore store(std::move(*inner), {.failures = 2, .probe_interval = 10s});
  const Limit limit = *Limit::make(Algorithm::kFixedWindow, 5, kMicrosPerSecond);
  for (int i = 0; i < 10; ++i) {
    auto bad = store.check("", limit);  // an empty key: the caller's mistake, not the backend's
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  }
  EXPECT_FALSE(store.open());
  redis.stop();  // connection refused: kUnavailable at once
  for (int i = 0; i < 2; ++i) {
    std::promise<Result<Decisions>> promise;
    store.check_all_async(std::vector<KeyedLimit>{{"x", &limit}}, 1, std::nullopt,
                          [&](Result<Decisions> d) { promise.set_value(std::move(d)); });
    EXPECT_FALSE(promise.get_future().get().has_value());
  }
  EXPECT_TRUE(store.open()) << "two asynchronous failures in a row open it too";
}

TEST(CircuitBreaker, OpenStoreWrapsRedisButNotMemory) {
  testing::RedisServer redis;
  auto wrapped = open_store(redis.url(), {.breaker = {.failures = 4}});
  ASSERT_TRUE(wrapped.has_value());
  EXPECT_NE(dynamic_cast<CircuitBreakerStore*>(wrapped->get()), nullptr);
  auto plain = open_store(redis.url(), {.breaker = {.failures = 0}});
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(dynamic_cast<CircuitBreakerStore*>(plain->get()), nullptr);
  auto memory = open_store("memory");
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(dynamic_cast<CircuitBreakerStore*>(memory->get()), nullptr);
}

}  // namespace
}  // namespace spillway
