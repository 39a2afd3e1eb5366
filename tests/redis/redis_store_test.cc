// The Redis backend against a real redis-server: one conformance suite run on both backends,
// a differential test (memory vs Redis on random traces, all five algorithms), NOSCRIPT recovery
// under load, TTLs on every key, and faults.
#include "spillway/redis_store.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <sstream>
#include <thread>

#include "spillway/memory_store.h"
#include "tests/support/key_audit.h"
#include "tests/support/poll.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using testing::RedisServer;

// Every algorithm of the list (spillway/algorithm_list.h): a new one is tested here too.
constexpr auto& kAllAlgorithms = kAlgorithms;

// One redis-server for the whole file.
RedisServer& store_server() {
  static RedisServer* instance = new RedisServer();
  return *instance;
}

std::string store_unique_prefix() {
  static std::atomic<int> counter{0};
  return "test" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

std::unique_ptr<RedisStore> single_redis_store(
    std::chrono::milliseconds ttl_floor = std::chrono::minutes(5)) {
  auto store = RedisStore::open({.url = store_server().url(),
                                 .key_prefix = store_unique_prefix(),
                                 .timeout = std::chrono::milliseconds(2000),
                                 .pool_size = 2,
                                 .ttl_floor = ttl_floor});
  EXPECT_TRUE(store.has_value());
  return std::move(*store);
}

// ------------------------------------------------------------------------------------------------
// Conformance: the same scenarios, with explicit `now`, on the memory and the Redis backend.
// ------------------------------------------------------------------------------------------------

// The same store on a Redis Cluster (3 primaries, 3 replicas).
std::unique_ptr<RedisStore> cluster_redis_store() {
  auto store = RedisStore::open({.url = testing::shared_cluster().url(),
                                 .key_prefix = store_unique_prefix(),
                                 .timeout = std::chrono::milliseconds(2000),
                                 .pool_size = 2,
                                 .ttl_floor = std::chrono::minutes(5)});
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  return std::move(*store);
}

// The same store over mutual TLS (client certificate required) to a TLS-only redis-server.
std::unique_ptr<RedisStore> tls_store() {
  static RedisServer* tls_server = new RedisServer(RedisServer::Tls{.require_client_cert = true});
  auto store = RedisStore::open({.url = tls_server->url(),
                                 .key_prefix = store_unique_prefix(),
                                 .timeout = std::chrono::milliseconds(2000),
                                 .pool_size = 2,
                                 .ttl_floor = std::chrono::minutes(5)});
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  return std::move(*store);
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> make() {
    if (GetParam() == "memory") return std::make_unique<MemoryStore>();
    if (GetParam() == "cluster") return cluster_redis_store();
    if (GetParam() == "tls") return tls_store();
    return single_redis_store();
  }
};

Decision must(Result<Decision> d) {
  EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().message);
  return d.value_or(Decision{});
}

TEST_P(Conformance, BurstAdmitsExactlyBThenRetryIsExact) {
  auto store = make();
  for (Algorithm a : {Algorithm::kGcra, Algorithm::kTokenBucket}) {
    const Limit limit = *Limit::make(a, 10, kMicrosPerSecond, 4);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(must(store->check("b", limit, 1, 1000)).allowed);
    const Decision denied = must(store->check("b", limit, 1, 1000));
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 100'000);  // T = 1s / 10
    EXPECT_FALSE(must(store->check("b", limit, 1, 1000 + 99'999)).allowed);
    EXPECT_TRUE(must(store->check("b", limit, 1, 1000 + 100'000)).allowed);
  }
}

TEST_P(Conformance, DeniedLargeCostDoesNotLockOutSmallerRequests) {
  auto store = make();
  for (Algorithm a : kAllAlgorithms) {
    const Limit limit = *Limit::make(a, 10, kMicrosPerMinute);
    const std::string key = "pollution-" + std::string(algorithm_name(a));
    EXPECT_TRUE(must(store->check(key, limit, 7, 5)).allowed);
    EXPECT_FALSE(must(store->check(key, limit, 5, 6)).allowed) << algorithm_name(a);
    const Decision small = must(store->check(key, limit, 3, 7));
    EXPECT_TRUE(small.allowed) << algorithm_name(a);
    EXPECT_EQ(small.remaining, 0) << algorithm_name(a);
  }
}

TEST_P(Conformance, CostAboveCapacityNeverFitsAndPeekChangesNothing) {
  auto store = make();
  for (Algorithm a : kAllAlgorithms) {
    const Limit limit = *Limit::make(a, 5, kMicrosPerSecond);
    const std::string key = "never-" + std::string(algorithm_name(a));
    const Decision never = must(store->check(key, limit, 6, 10));
    EXPECT_FALSE(never.allowed);
    EXPECT_EQ(never.retry_after, kNever) << algorithm_name(a);
    EXPECT_TRUE(must(store->check(key, limit, 2, 10)).allowed);
    const Decision peek1 = must(store->check(key, limit, 0, 10));
    const Decision peek2 = must(store->check(key, limit, 0, 10));
    EXPECT_TRUE(peek1.allowed);
    EXPECT_EQ(peek1, peek2) << algorithm_name(a);
    EXPECT_EQ(peek1.remaining, 3) << algorithm_name(a);
  }
}

TEST_P(Conformance, ClockGoingBackwardsGrantsNothing) {
  auto store = make();
  for (Algorithm a : kAllAlgorithms) {
    const Limit limit = *Limit::make(a, 3, kMicrosPerSecond);
    const std::string key = "backwards-" + std::string(algorithm_name(a));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(must(store->check(key, limit, 1, 5'000'000)).allowed);
    EXPECT_FALSE(must(store->check(key, limit, 1, 4'000'000)).allowed) << algorithm_name(a);
    EXPECT_FALSE(must(store->check(key, limit, 1, 0)).allowed) << algorithm_name(a);
  }
}

TEST_P(Conformance, GcraAtHighRateIsLimitedExactly) {
  // The seed article's int(1000 / rate) makes the interval 0 above 1000/s: nothing is limited.
  auto store = make();
  // Burst 2: while one token waits for the next 50 µs sample the bucket is never full, so no
  // refill is lost to the sampling grid.
  const Limit limit = *Limit::make(Algorithm::kGcra, 3000, kMicrosPerSecond, 2);
  int admitted = 0;
  for (Micros t = 0; t <= 100'000; t += 50)
    admitted += must(store->check("fast", limit, 1, t)).allowed;
  EXPECT_EQ(admitted, 300 + 2);  // 3000/s over 0.1 s, plus the burst of 2 at t = 0
}

TEST_P(Conformance, InvalidInputIsRejectedAndChangesNothing) {
  auto store = make();
  const Limit limit = *Limit::make(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  EXPECT_EQ(store->check("", limit).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(store->check(std::string(1025, 'x'), limit).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(store->check("k", limit, -1).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(store->check("k", limit, 1, -5).error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(must(store->check("k", limit, 1, 10)).allowed);  // nothing was charged before
}

TEST_P(Conformance, KeysOfDifferentLimitsAndBytesNeverCollide) {
  auto store = make();
  const Limit a = *Limit::make(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  const Limit b = *Limit::make(Algorithm::kFixedWindow, 1, 2 * kMicrosPerSecond);
  const Limit c = *Limit::make(Algorithm::kSlidingWindow, 1, kMicrosPerSecond);
  EXPECT_TRUE(must(store->check("x", a, 1, 10)).allowed);
  EXPECT_TRUE(must(store->check("x", b, 1, 10)).allowed);
  EXPECT_TRUE(must(store->check("x", c, 1, 10)).allowed);
  EXPECT_TRUE(must(store->check("x}", a, 1, 10)).allowed);
  EXPECT_TRUE(must(store->check("{x}", a, 1, 10)).allowed);
  EXPECT_TRUE(must(store->check(std::string("x\0y", 3), a, 1, 10)).allowed);
  EXPECT_FALSE(must(store->check("x", a, 1, 10)).allowed);
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values("memory", "redis", "cluster", "tls"));

// ------------------------------------------------------------------------------------------------
// Differential: the Lua scripts decide exactly as the C++ math, on random traces.
// ------------------------------------------------------------------------------------------------

// Random traces of one random limit through the memory store and `redis`: same decisions.
void same_decisions_as_memory(Store& redis) {
  const Algorithm algorithm = *rc::gen::elementOf(
      std::vector<Algorithm>(std::begin(kAllAlgorithms), std::end(kAllAlgorithms)));
  const std::int64_t limit_value = *rc::gen::inRange<std::int64_t>(1, 40);
  const Micros period = *rc::gen::element<Micros>(1, 7, 1000, 999'983, kMicrosPerSecond,
                                                  kMicrosPerMinute, kMicrosPerDay);
  std::optional<std::int64_t> burst;
  if (algorithm == Algorithm::kGcra || algorithm == Algorithm::kTokenBucket) {
    burst = *rc::gen::inRange<std::int64_t>(1, 50);
  }
  Limit limit = *Limit::make(algorithm, limit_value, period, burst);
  // Half of the bucket limits shape (docs/SPEC.md §2.2): the scripts return the same delays.
  if (burst && *rc::gen::inRange(0, 2) == 0) {
    limit = *limit.with_max_delay(*rc::gen::inRange<Micros>(1, 3 * period + 2));
  }
  // A lower priority's view of the same limit (docs/SPEC.md §2.4), checked on the same keys now
  // and then: one state, admissions that leave the reserve.
  const Limit lower =
      *limit.with_reserved(*rc::gen::inRange<std::int64_t>(1, limit.capacity() + 1));
  MemoryStore memory;
  const int steps = *rc::gen::inRange(1, 60);
  Micros now = *rc::gen::inRange<Micros>(0, 10'000'000);
  for (int i = 0; i < steps; ++i) {
    now = std::max<Micros>(0, now + *rc::gen::inRange<Micros>(-period / 4 - 1, period + 2));
    const std::string key = *rc::gen::element<std::string>("a", "b");
    const std::int64_t cost = *rc::gen::inRange<std::int64_t>(0, limit_value + 3);
    const Limit& asked = *rc::gen::inRange(0, 3) == 0 ? lower : limit;
    auto expected = memory.check(key, asked, cost, now);
    auto got = redis.check(key, asked, cost, now);
    RC_ASSERT(expected.has_value());
    RC_ASSERT(got.has_value());
    if (!(*expected == *got)) {
      std::ostringstream why;
      why << asked.describe() << " step " << i << " now=" << now << " key=" << key
          << " cost=" << cost << ": memory {" << expected->allowed << "," << expected->remaining
          << "," << expected->retry_after << "," << expected->reset_after << "," << expected->delay
          << "} redis {" << got->allowed << "," << got->remaining << "," << got->retry_after << ","
          << got->reset_after << "," << got->delay << "}";
      RC_FAIL(why.str());
    }
  }
}

RC_GTEST_PROP(RedisDifferential, SameDecisionsAsMemoryOnRandomTraces, ()) {
  same_decisions_as_memory(*single_redis_store());
}

RC_GTEST_PROP(ClusterDifferential, SameDecisionsAsMemoryOnRandomTraces, ()) {
  same_decisions_as_memory(*cluster_redis_store());
}

TEST(RedisDifferential, LargeNumbersStayExact) {
  // Values near the 2^52 bound: the Lua mirror must still agree with the C++ to the µs.
  MemoryStore memory;
  auto redis = single_redis_store();
  const Limit gcra = *Limit::make(Algorithm::kGcra, 999'983, kMicrosPerDay, 1'000'000);
  const Limit window = *Limit::make(Algorithm::kSlidingWindow, 50'000, kMicrosPerDay);
  Micros now = 1'764'000'000'000'000;  // 2025 in µs since the epoch
  for (int i = 0; i < 200; ++i) {
    now += 12'345 * (i % 7);
    for (const Limit* limit : {&gcra, &window}) {
      const std::int64_t cost = 1 + (i * 7919) % 900;
      auto expected = memory.check("big", *limit, cost, now);
      auto got = redis->check("big", *limit, cost, now);
      ASSERT_TRUE(expected && got);
      ASSERT_EQ(*expected, *got) << limit->describe() << " at step " << i;
    }
  }
}

// How many calls of `command` (lower case) the server has served (INFO commandstats).
long long calls_of(const std::string& command) {
  const std::string info = store_server().cli("INFO commandstats");
  const std::string tag = "cmdstat_" + command + ":calls=";
  const std::size_t at = info.find(tag);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + tag.size()));
}

// Batches: checks queued behind a call in flight go together in one script call (lua/batch.lua),
// where a check with its predecessor's limit sends its cost alone. Random sequences of one
// algorithm's checks over three limits (mostly repeating the previous one), in runs sharing a
// `now`, all submitted at once: every decision is the one the memory store makes one by one.
// One call is out at a time, so calls run in submission order: a run of one `now` stays shorter
// than max_batch (a full batch would go at once, beside the call out, from another thread).
TEST(RedisBatches, ChecksBatchedInOneCallDecideAsOneByOne) {
  std::mt19937_64 random(20261201);
  const auto pick = [&random](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  const long long calls_before = calls_of("evalsha");
  long long checks = 0;
  for (int round = 0; round < 60; ++round) {
    const Algorithm algorithm = kAllAlgorithms[round % std::size(kAllAlgorithms)];
    std::vector<Limit> limits;
    for (int l = 0; l < 3; ++l) {
      const Micros period = std::vector<Micros>{7, 1000, kMicrosPerSecond, kMicrosPerMinute}.at(
          static_cast<std::size_t>(pick(0, 3)));
      std::optional<std::int64_t> burst;
      if (algorithm == Algorithm::kGcra || algorithm == Algorithm::kTokenBucket) {
        burst = pick(1, 20);
      }
      limits.push_back(*Limit::make(algorithm, pick(1, 20), period, burst));
    }
    const int max_batch = static_cast<int>(pick(3, 16));
    auto store = RedisStore::open({.url = store_server().url(),
                                   .key_prefix = store_unique_prefix(),
                                   .timeout = std::chrono::milliseconds(5000),
                                   // The checks' `now` is not Redis' clock: keys must outlive
                                   // their µs-long periods in real time (as in replay).
                                   .ttl_floor = std::chrono::minutes(5),
                                   .max_batch = max_batch,
                                   .max_in_flight = 1});
    ASSERT_TRUE(store.has_value());
    struct BatchedOp {
      std::string key;
      std::size_t limit;
      std::int64_t cost;
      Micros now;
    };
    std::vector<BatchedOp> ops;
    Micros now = pick(0, 10'000'000);
    std::size_t limit = 0;
    const int count = static_cast<int>(pick(1, 80));
    int run = 0;  // checks so far at this `now`
    for (int i = 0; i < count; ++i) {
      if (pick(0, 9) < 3) limit = static_cast<std::size_t>(pick(0, 2));
      if (pick(0, 9) < 1 || run == max_batch - 1) {
        now += pick(1, 2 * limits[limit].period());
        run = 0;
      }
      ++run;
      ops.push_back({pick(0, 1) ? "a" : "b", limit, pick(0, limits[limit].limit() + 2), now});
    }
    std::vector<std::promise<Result<Decision>>> answers(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      (*store)->check_async(
          ops[i].key, limits[ops[i].limit], ops[i].cost, ops[i].now,
          [&answers, i](Result<Decision> d) { answers[i].set_value(std::move(d)); });
    }
    std::vector<Result<Decision>> answered;  // every answer is in before anything is asserted
    for (auto& answer : answers) answered.push_back(answer.get_future().get());
    MemoryStore memory;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const BatchedOp& op = ops[i];
      const Result<Decision> expected = memory.check(op.key, limits[op.limit], op.cost, op.now);
      const Result<Decision>& got = answered[i];
      ASSERT_TRUE(expected.has_value());
      ASSERT_TRUE(got.has_value()) << got.error().message;
      ASSERT_EQ(*expected, *got) << "round " << round << ", check " << i << " of " << ops.size()
                                 << ": " << limits[op.limit].describe() << " key " << op.key
                                 << " cost " << op.cost << " now " << op.now;
    }
    checks += static_cast<long long>(ops.size());
  }
  const long long calls = calls_of("evalsha") - calls_before;
  std::printf("%lld checks in %lld script calls\n", checks, calls);
  EXPECT_LT(calls * 2, checks) << "the checks were hardly batched: the test proves little";
}

// ------------------------------------------------------------------------------------------------
// Script lifecycle: SCRIPT FLUSH during sustained load costs no errors and no wrong decisions.
// ------------------------------------------------------------------------------------------------

// How many EVAL calls (the NOSCRIPT recovery) the server has served.
long long noscript_recoveries() { return calls_of("eval"); }

TEST(RedisScripts, ScriptFlushDuringLoadIsInvisible) {
  auto redis = single_redis_store();
  MemoryStore memory;
  std::atomic<bool> done{false};
  std::atomic<int> flushes{0};
  std::thread flusher([&] {
    while (!done) {
      store_server().cli("SCRIPT FLUSH");
      ++flushes;  // as fast as redis-cli runs: a few milliseconds apart
    }
  });
  const auto recoveries_before = noscript_recoveries();
  int errors = 0;
  int mismatches = 0;
  for (int i = 0; i < 3000 || flushes < 40; ++i) {
    const Algorithm a = kAllAlgorithms[i % kAlgorithmCount];
    const Limit limit = *Limit::make(a, 5, kMicrosPerSecond);
    const std::string key = "flush-" + std::to_string(i % 17);
    const Micros now = 1'000'000 + i * 1'000;
    auto expected = memory.check(key, limit, 1, now);
    auto got = redis->check(key, limit, 1, now);
    if (!got) {
      ++errors;
      continue;
    }
    mismatches += !(*expected == *got);
  }
  done = true;
  flusher.join();
  EXPECT_GE(flushes.load(), 40);
  EXPECT_GE(noscript_recoveries() - recoveries_before, 20)
      << "NOSCRIPT was not hit: the test proves nothing";
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(mismatches, 0);
}

// ------------------------------------------------------------------------------------------------
// TTLs: every key written has one, no longer than needed, and all are gone once it passes.
// ------------------------------------------------------------------------------------------------

TEST(RedisKeys, EveryKeyHasATtlAndAllExpire) {
  // Server clock (no `now`), no TTL floor: production behaviour.
  const std::string prefix = "ttl-" + store_unique_prefix();
  // Keys expire on Redis' clock while the test runs: each algorithm is audited right after its
  // checks, and P is long enough that a slow (sanitized) run still finds its keys alive.
  const Micros period = 1000 * kMicrosPerMilli;
  for (Algorithm a : kAllAlgorithms) {
    const Limit limit = *Limit::make(a, 20, period);
    // A prefix per algorithm: key names are digests, which do not say the algorithm.
    const std::string algorithm_prefix = prefix + "-" + std::string(algorithm_name(a));
    auto store = RedisStore::open({.url = store_server().url(), .key_prefix = algorithm_prefix});
    ASSERT_TRUE(store);
    // Up to 10 keys (one per user); some may already be idle and gone (a fixed window ends on
    // Redis' clock, possibly a moment after its writes, taking every key with it), which is
    // right: only keys with no TTL or a long one are wrong. So a round that finds no key is run
    // again, in the next window (a round takes a small part of a window, so one of three in a row
    // ends inside its window).
    testing::KeyAudit audit;
    for (int round = 0; round < 3 && audit.keys == 0; ++round) {
      for (int i = 0; i < 50; ++i) {
        ASSERT_TRUE((*store)->check("user" + std::to_string(i % 10), limit, 1 + i % 3).has_value());
      }
      audit = testing::audit_keys(store_server(), algorithm_prefix + ":*");
      EXPECT_EQ(audit.without_ttl, 0) << algorithm_name(a) << ", round " << round;
    }
    EXPECT_GT(audit.keys, 0) << algorithm_name(a);
    EXPECT_LE(audit.keys, 10) << algorithm_name(a) << ": one key per user";
    EXPECT_LE(audit.max_pttl_ms, 2 * period / 1000 + 1) << algorithm_name(a) << ": a TTL over 2P";
    EXPECT_GT(audit.max_pttl_ms, 0) << algorithm_name(a);
  }
  // Every key is gone within 2P (+ 300 ms of slack) of its last write.
  testing::wait_until([&] { return testing::audit_keys(store_server(), prefix + "-*").keys == 0; },
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::microseconds(2 * period + 300'000)));
  EXPECT_EQ(testing::audit_keys(store_server(), prefix + "-*").keys, 0)
      << "keys outlived their TTL";
}

// ------------------------------------------------------------------------------------------------
// Faults: Redis down -> a clear error within the timeout; back -> checks succeed again.
// ------------------------------------------------------------------------------------------------

TEST(RedisFaults, DownGivesErrorsThenRecoversWithoutRestart) {
  RedisServer own;  // this test kills its server
  auto store = RedisStore::open(
      {.url = own.url(), .key_prefix = "faults", .timeout = std::chrono::milliseconds(300)});
  ASSERT_TRUE(store);
  const Limit limit = *Limit::make(Algorithm::kGcra, 100, kMicrosPerSecond);
  Result<Decision> first = std::unexpected(Error{Errc::kInternal, ""});
  testing::wait_until([&] {  // the pool connects in the background
    first = (*store)->check("k", limit);
    return first.has_value();
  });
  ASSERT_TRUE(first.has_value()) << first.error().message;

  own.stop();
  const auto before = std::chrono::steady_clock::now();
  auto down = (*store)->check("k", limit);
  ASSERT_FALSE(down.has_value());
  EXPECT_TRUE(down.error().code == Errc::kUnavailable || down.error().code == Errc::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(3));
  // Bad input is rejected before any Redis call: an invalid-argument error, not unavailable.
  EXPECT_EQ((*store)->check("", limit).error().code, Errc::kInvalidArgument);

  own.start();
  const bool recovered =
      testing::wait_until([&] { return (*store)->check("k", limit).has_value(); });
  EXPECT_TRUE(recovered) << "checks did not succeed again after Redis came back";
}

}  // namespace
}  // namespace spillway

namespace spillway {
namespace {

// backend.timeout bounds the whole wait, time queued included: with one call in flight at a
// time and Redis silent, checks queued behind it must not each get a fresh timeout (before, the
// sixth waited six timeouts).
TEST(RedisDeadline, QueuedChecksNeverWaitLongerThanTheTimeout) {
  using namespace std::chrono_literals;
  testing::RedisServer redis;
  auto store = RedisStore::open({.url = redis.url(),
                                 .key_prefix = "deadline",
                                 .timeout = 1000ms,
                                 .max_batch = 8,  // more than kChecks: they queue, not overflow
                                 .max_in_flight = 1});
  ASSERT_TRUE(store.has_value());
  const Limit limit = *Limit::make(Algorithm::kGcra, 100, kMicrosPerSecond);
  ASSERT_TRUE((*store)->check("warm", limit).has_value());
  redis.pause();
  constexpr int kChecks = 6;
  std::vector<std::promise<std::pair<Result<Decision>, std::chrono::milliseconds>>> answers(
      kChecks);
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kChecks; ++i) {
    (*store)->check_async(
        "k" + std::to_string(i), limit, 1, std::nullopt,
        [&answers, i, started](Result<Decision> d) {
          answers[i].set_value({std::move(d), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::steady_clock::now() - started)});
        });
  }
  for (int i = 0; i < kChecks; ++i) {
    auto [decision, waited] = answers[i].get_future().get();
    ASSERT_FALSE(decision.has_value()) << "Redis is paused";
    EXPECT_EQ(decision.error().code, Errc::kTimeout) << decision.error().message;
    // 1 s and scheduling slack; a fresh timeout per queued check would be 2 s or more.
    EXPECT_LT(waited, 1700ms) << "check " << i << ": " << decision.error().message;
  }
  redis.resume();
  EXPECT_TRUE((*store)->check("after", limit).has_value());
}

}  // namespace
}  // namespace spillway
