// All-or-nothing checks over several keys (the layers of one request), on both backends: a
// request is charged to every key or to none, and the two backends decide identically.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <thread>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

testing::RedisServer& server() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

std::unique_ptr<Store> redis_store() {
  static std::atomic<int> counter{0};
  auto store = RedisStore::open(
      {.url = server().url(),
       .key_prefix = "all" + std::to_string(getpid()) + "-" + std::to_string(counter++),
       .ttl_floor = std::chrono::minutes(5)});
  EXPECT_TRUE(store.has_value());
  return std::move(*store);
}

// On a Redis Cluster: the layers' keys fall on different hash slots (reserve, then refund).
// dry_run_first false: every request a slot denies is reserved on the others and refunded.
std::unique_ptr<Store> cluster_store(bool dry_run_first = true) {
  static std::atomic<int> counter{0};
  auto store = RedisStore::open(
      {.url = testing::shared_cluster().url(),
       .key_prefix = "all" + std::to_string(getpid()) + "-" + std::to_string(counter++),
       .ttl_floor = std::chrono::minutes(5),
       .cluster_dry_run_first = dry_run_first});
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  return std::move(*store);
}

class CheckAll : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> make() {
    if (GetParam() == "memory") return std::make_unique<MemoryStore>();
    if (GetParam() == "cluster") return cluster_store();
    if (GetParam() == "cluster-reserve") return cluster_store(false);
    return redis_store();
  }
};

const Limit kEdge = *Limit::make(Algorithm::kGcra, 5, kMicrosPerMinute);
const Limit kGateway = *Limit::make(Algorithm::kFixedWindow, 3, kMicrosPerMinute);
const Limit kEndpoint = *Limit::make(Algorithm::kSlidingWindow, 2, kMicrosPerMinute);

Decisions must(Result<Decisions> d) {
  EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().message);
  return d.value_or(Decisions{});
}

TEST_P(CheckAll, ChargesEveryLayerWhenAllAdmit) {
  auto store = make();
  const KeyedLimit layers[] = {{"ip", &kEdge}, {"key", &kGateway}, {"key/search", &kEndpoint}};
  const Decisions first = must(store->check_all(layers, 1, 1'000));
  ASSERT_EQ(first.size(), 3u);
  EXPECT_TRUE(all_allowed(first));
  EXPECT_EQ(first[0].remaining, 4);
  EXPECT_EQ(first[1].remaining, 2);
  EXPECT_EQ(first[2].remaining, 1);
}

TEST_P(CheckAll, ADeniedRequestChargesNoLayer) {
  auto store = make();
  const KeyedLimit layers[] = {{"ip", &kEdge}, {"key", &kGateway}, {"key/search", &kEndpoint}};
  ASSERT_TRUE(all_allowed(must(store->check_all(layers, 1, 1'000))));
  ASSERT_TRUE(all_allowed(must(store->check_all(layers, 1, 1'000))));
  // The endpoint layer (2 per minute) is spent: the third request is denied by it alone...
  const Decisions denied = must(store->check_all(layers, 1, 1'000));
  EXPECT_TRUE(denied[0].allowed);
  EXPECT_TRUE(denied[1].allowed);
  EXPECT_FALSE(denied[2].allowed);
  EXPECT_GT(denied[2].retry_after, 0);
  // ...and charges nothing: edge and gateway report what they had after two requests.
  EXPECT_EQ(denied[0].remaining, 3);
  EXPECT_EQ(denied[1].remaining, 1);
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(all_allowed(must(store->check_all(layers, 1, 1'000))));
  const Decision edge = *store->check("ip", kEdge, 0, 1'000);
  const Decision gateway = *store->check("key", kGateway, 0, 1'000);
  EXPECT_EQ(edge.remaining, 3) << "a denied request charged the edge layer";
  EXPECT_EQ(gateway.remaining, 1) << "a denied request charged the gateway layer";
  // Another endpoint of the same key still gets the gateway's last unit.
  const KeyedLimit other[] = {{"ip", &kEdge}, {"key", &kGateway}, {"key/export", &kEndpoint}};
  EXPECT_TRUE(all_allowed(must(store->check_all(other, 1, 1'000))));
}

TEST_P(CheckAll, RejectsBadInputWithoutCharging) {
  auto store = make();
  const KeyedLimit twice[] = {{"a", &kEdge}, {"a", &kEdge}};
  EXPECT_EQ(store->check_all(twice, 1, 1'000).error().code, Errc::kInvalidArgument);
  const KeyedLimit empty_key[] = {{"a", &kEdge}, {"", &kGateway}};
  EXPECT_EQ(store->check_all(empty_key, 1, 1'000).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(store->check_all({}, 1, 1'000).error().code, Errc::kInvalidArgument);
  const KeyedLimit one[] = {{"a", &kEdge}};
  EXPECT_EQ(store->check_all(one, -1, 1'000).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(store->check("a", kEdge, 0, 1'000)->remaining, 5);
}

// A layer that counts tokens next to one that counts requests: each is charged its own cost, and
// still all or nothing.
TEST_P(CheckAll, EachLayerIsChargedItsOwnCost) {
  auto store = make();
  const Limit requests = *Limit::make(Algorithm::kFixedWindow, 3, kMicrosPerMinute);
  const Limit tokens = *Limit::make(Algorithm::kSlidingWindow, 1'000, kMicrosPerMinute);
  const auto request = [&](std::int64_t used) {
    const KeyedLimit layers[] = {{"rpm", &requests}, {"tpm", &tokens, used}};
    return must(store->check_all(layers, 1, 1'000));
  };
  const Decisions first = request(600);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(all_allowed(first));
  EXPECT_EQ(first[0].remaining, 2);
  EXPECT_EQ(first[1].remaining, 400);
  // 600 more tokens do not fit: denied by the token layer, and the request layer is not charged.
  const Decisions denied = request(600);
  EXPECT_TRUE(denied[0].allowed);
  EXPECT_FALSE(denied[1].allowed);
  EXPECT_EQ(denied[0].remaining, 2);
  EXPECT_EQ(denied[1].remaining, 400);
  const Decisions fits = request(400);
  EXPECT_TRUE(all_allowed(fits));
  EXPECT_EQ(fits[0].remaining, 1);
  EXPECT_EQ(fits[1].remaining, 0);
  // A key's own cost below 0 (other than kRequestCost) is refused, naming the key.
  const KeyedLimit bad[] = {{"rpm", &requests}, {"tpm", &tokens, -5}};
  auto refused = store->check_all(bad, 1, 1'000);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("\"tpm\""), std::string::npos) << refused.error().message;
  EXPECT_EQ(store->check("rpm", requests, 0, 1'000)->remaining, 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, CheckAll,
                         ::testing::Values("memory", "redis", "cluster", "cluster-reserve"));

// Random layered requests through the memory store and `redis`, some layers with a cost of their
// own: the same decisions, layer by layer (on a cluster the layers' keys fall on different slots:
// reserve, then refund).
void check_all_like_memory(Store& redis) {
  const std::vector<Limit> limits = {
      *Limit::make(Algorithm::kFixedWindow, 4, 1'000), *Limit::make(Algorithm::kSlidingLog, 3, 700),
      *Limit::make(Algorithm::kSlidingWindow, 5, 900),
      *Limit::make(Algorithm::kTokenBucket, 2, 500, 3), *Limit::make(Algorithm::kGcra, 6, 1'100, 2),
      // Shaping (docs/SPEC.md §2.2): delays on every backend.
      *Limit::make(Algorithm::kTokenBucket, 3, 600, 1)->with_max_delay(700),
      *Limit::make(Algorithm::kGcra, 4, 800, 2)->with_max_delay(450),
      // Lower priorities' views of the first window and the first gcra (docs/SPEC.md §2.4): on
      // the same keys as those (one state), admissions that leave the reserve.
      *Limit::make(Algorithm::kFixedWindow, 4, 1'000)->with_reserved(2),
      *Limit::make(Algorithm::kGcra, 6, 1'100, 2)->with_reserved(1)};
  // Which key group each limit uses: a lower priority's view shares its limit's keys.
  const std::vector<std::size_t> group = {0, 1, 2, 3, 4, 5, 6, 0, 4};
  MemoryStore memory;
  Micros now = 0;
  const int steps = *rc::gen::inRange(1, 40);
  for (int step = 0; step < steps; ++step) {
    now += *rc::gen::inRange<Micros>(0, 300);
    // A random subset of layers, each with one of two keys.
    // (At most one view of a group per request.)
    std::vector<std::string> names;
    std::vector<KeyedLimit> layers;
    std::vector<std::size_t> picked;
    std::vector<bool> grouped(limits.size(), false);
    for (std::size_t i = 0; i < limits.size(); ++i) {
      if (*rc::gen::inRange(0, 3) == 0 || grouped[group[i]]) continue;
      grouped[group[i]] = true;
      names.push_back("k" + std::to_string(group[i]) + "-" +
                      std::to_string(*rc::gen::inRange(0, 2)));
      picked.push_back(i);
    }
    if (names.empty()) {
      names.push_back("k0-0");
      picked.push_back(0);
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      // Some layers have a cost of their own (they count tokens where others count requests).
      const std::int64_t own = *rc::gen::inRange<std::int64_t>(-3, 5);
      layers.push_back({names[i], &limits[picked[i]], own < 0 ? kRequestCost : own});
    }
    const std::int64_t cost = *rc::gen::inRange<std::int64_t>(0, 4);
    auto expected = memory.check_all(layers, cost, now);
    auto got = redis.check_all(layers, cost, now);
    RC_ASSERT(expected.has_value());
    RC_ASSERT(got.has_value());
    if (!(*expected == *got)) {
      std::string why = "step " + std::to_string(step) + " now " + std::to_string(now) + ":";
      for (std::size_t i = 0; i < layers.size(); ++i) {
        const Decision& e = (*expected)[i];
        const Decision& g = (*got)[i];
        why += "\n  " + std::string(layers[i].key) + " " + layers[i].limit->describe() +
               " memory {" + std::to_string(e.allowed) + "," + std::to_string(e.remaining) + "," +
               std::to_string(e.retry_after) + "," + std::to_string(e.reset_after) + "," +
               std::to_string(e.delay) + "} redis {" + std::to_string(g.allowed) + "," +
               std::to_string(g.remaining) + "," + std::to_string(g.retry_after) + "," +
               std::to_string(g.reset_after) + "," + std::to_string(g.delay) + "}";
      }
      RC_FAIL(why);
    }
  }
}

RC_GTEST_PROP(CheckAllDifferential, MemoryAndRedisDecideAlike, ()) {
  check_all_like_memory(*redis_store());
}

RC_GTEST_PROP(CheckAllDifferential, MemoryAndClusterDecideAlike, ()) {
  check_all_like_memory(*cluster_store());
}

RC_GTEST_PROP(CheckAllDifferential, MemoryAndClusterWithReserveAndRefundDecideAlike, ()) {
  check_all_like_memory(*cluster_store(false));
}

TEST(CheckAllMemory, ConcurrentOverlappingRequestsAreExactAndNeverDeadlock) {
  // Every thread's requests share the "shared" layer (limit 300) and have a layer of their own
  // (limit 1000); keys are visited in different orders by different threads.
  MemoryStore store({.shards = 4});
  const Limit shared = *Limit::make(Algorithm::kFixedWindow, 300, kMicrosPerDay);
  const Limit own = *Limit::make(Algorithm::kGcra, 1000, kMicrosPerDay);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      const std::string mine = "own-" + std::to_string(t);
      for (int i = 0; i < 200; ++i) {
        const KeyedLimit forward[] = {{"shared", &shared}, {mine, &own}};
        const KeyedLimit backward[] = {{mine, &own}, {"shared", &shared}};
        auto d = store.check_all(
            i % 2 ? std::span<const KeyedLimit>(forward) : std::span<const KeyedLimit>(backward), 1,
            1'000);
        if (d && all_allowed(*d)) ++admitted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 300);
  // Each thread's own layer was charged only for its admitted requests.
  int charged = 0;
  for (int t = 0; t < 6; ++t) {
    charged +=
        1000 - static_cast<int>(store.check("own-" + std::to_string(t), own, 0, 1'000)->remaining);
  }
  EXPECT_EQ(charged, 300);
}

TEST(CheckAllMemory, AFullStoreChangesNothing) {
  MemoryStore store({.shards = 1, .max_keys = 2});
  const Limit limit = *Limit::make(Algorithm::kGcra, 10, kMicrosPerMinute);
  ASSERT_TRUE(store.check("a", limit, 1, 1'000)->allowed);
  const KeyedLimit layers[] = {{"a", &limit}, {"b", &limit}, {"c", &limit}};
  auto full = store.check_all(layers, 1, 1'000);
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.error().code, Errc::kStoreFull);
  EXPECT_EQ(store.check("a", limit, 0, 1'000)->remaining, 9) << "layer a was charged";
  EXPECT_EQ(store.size(), 1u);
}

}  // namespace
}  // namespace spillway
