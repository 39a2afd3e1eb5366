// on_error: local on a real Redis that goes away and comes back: while it is down, the same
// limits are enforced by the in-process store (exactly, per instance); when it is back, the
// decisions come from Redis again (its keys are written again). Input errors are not hidden.
#include "spillway/local_fallback.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "spillway/open_store.h"
#include "src/redis/storage_key.h"
#include "tests/support/poll.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

// How many of `n` checks of `key` (cost 1) were admitted; every check must get a decision.
int admitted_of(Store& store, std::string_view key, const Limit& limit, int n) {
  int admitted = 0;
  for (int i = 0; i < n; ++i) {
    Result<Decision> d = store.check(key, limit);
    EXPECT_TRUE(d.has_value()) << d.error().message;
    if (d && d->allowed) ++admitted;
  }
  return admitted;
}

int redis_keys(const testing::RedisServer& redis) { return std::stoi("0" + redis.cli("DBSIZE")); }

TEST(LocalFallback, EnforcesTheLimitLocallyWhileRedisIsDownAndReturnsToRedis) {
  testing::RedisServer redis;
  auto opened = open_store(redis.url(), {.redis = {.key_prefix = "lf", .timeout = 200ms},
                                         .breaker = {.failures = 2, .probe_interval = 200ms},
                                         .local_fallback = true});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  auto* store = dynamic_cast<LocalFallbackStore*>(opened->get());
  ASSERT_NE(store, nullptr) << "on_error local must wrap the Redis store";
  const Limit limit = *Limit::make(Algorithm::kFixedWindow, 5, 3600 * kMicrosPerSecond);

  EXPECT_EQ(admitted_of(*store, "up", limit, 3), 3);
  EXPECT_EQ(store->status(), "ready");
  EXPECT_EQ(store->local_decisions(), 0u);
  EXPECT_EQ(redis_keys(redis), 1);

  redis.stop();
  // Down: every check still gets a decision, and the limit (5 an hour) holds per key.
  EXPECT_EQ(admitted_of(*store, "down", limit, 8), 5);
  EXPECT_EQ(store->status(), "local_fallback");
  EXPECT_EQ(store->local_decisions(), 8u);
  EXPECT_TRUE(store->ready()) << "the instance can still decide";
  const std::vector<KeyedLimit> layers{{"ip-1", &limit}, {"key-1", &limit}};
  Result<Decisions> all = store->check_all(layers, 5);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_TRUE(all_allowed(*all));
  Result<Decisions> over = store->check_all(layers, 1);
  ASSERT_TRUE(over.has_value());
  EXPECT_FALSE(all_allowed(*over)) << "all-or-nothing holds locally too";
  std::string metrics;
  store->append_metrics(metrics);
  EXPECT_NE(metrics.find("spillway_local_fallback_decisions_total 10"), std::string::npos)
      << metrics;

  // Bad input is still an error, not a local decision.
  Result<Decision> bad = store->check("", limit);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);

  redis.start();  // empty: data was lost with the process
  // Back: after the breaker's probe the decisions come from Redis, which writes its keys again.
  // Each probe check is answered (locally, until the breaker lets one through to Redis).
  bool answered = true;
  const bool back = testing::wait_until(
      [&] {
        answered = answered && store->check("probe", limit).has_value();
        return !answered || store->status() == "ready";
      },
      std::chrono::seconds(10));
  ASSERT_TRUE(answered) << "a probe check during the return got an error";
  ASSERT_TRUE(back) << "still " << store->status();
  const std::uint64_t local_before = store->local_decisions();
  EXPECT_EQ(admitted_of(*store, "after", limit, 7), 5);
  EXPECT_EQ(store->local_decisions(), local_before) << "Redis is back: nothing decided locally";
  // The name RedisStore gives "after" under this prefix and limit (the default key_hash).
  const std::string after_key = redis::storage_key("lf", *KeyDigest::make({}), "after", limit);
  EXPECT_EQ(redis.cli("EXISTS " + after_key), "1\n")
      << "no Redis key for the checks after the return: " << redis.cli("KEYS '*'");
}

TEST(LocalFallback, AsyncChecksFallBackToo) {
  testing::RedisServer redis;
  auto opened = open_store(redis.url(), {.redis = {.key_prefix = "lfa", .timeout = 100ms},
                                         .breaker = {.failures = 0},
                                         .local_fallback = true});
  ASSERT_TRUE(opened.has_value());
  Store& store = **opened;
  const Limit limit = *Limit::make(Algorithm::kGcra, 3, 3600 * kMicrosPerSecond);
  redis.pause();  // alive but silent: each check waits for the timeout, then is decided locally
  int admitted = 0;
  for (int i = 0; i < 4; ++i) {
    std::promise<Result<Decision>> promise;
    store.check_async(std::string("k"), limit, 1, std::nullopt,
                      [&](Result<Decision> d) { promise.set_value(std::move(d)); });
    Result<Decision> d = promise.get_future().get();
    ASSERT_TRUE(d.has_value()) << d.error().message;
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 3);
  std::promise<Result<Decisions>> all;
  const std::vector<KeyedLimit> layers{{"a", &limit}, {"k", &limit}};
  store.check_all_async(layers, 1, std::nullopt,
                        [&](Result<Decisions> d) { all.set_value(std::move(d)); });
  Result<Decisions> decisions = all.get_future().get();
  ASSERT_TRUE(decisions.has_value()) << decisions.error().message;
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_TRUE((*decisions)[0].allowed);
  EXPECT_FALSE((*decisions)[1].allowed) << "k is spent locally, so the request is denied";
  redis.resume();
}

}  // namespace
}  // namespace spillway
