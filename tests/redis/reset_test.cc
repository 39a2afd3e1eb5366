// Operation::kReset on Redis and on a Redis Cluster: the keys are deleted (one script per hash
// slot), each decision says whether the key held state, the next check finds the key fresh, and
// the same key under another limit is untouched.
#include <gtest/gtest.h>

#include "spillway/redis_store.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

std::unique_ptr<RedisStore> open_reset_store(const std::string& url, const std::string& prefix) {
  RedisStoreOptions options;
  options.url = url;
  options.key_prefix = prefix;
  auto store = RedisStore::open(options);
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  EXPECT_TRUE((*store)->wait_ready(std::chrono::seconds(5)).has_value());
  return std::move(*store);
}

void expect_reset_forgets(RedisStore& store, int keys) {
  const Limit limit = *Limit::make(Algorithm::kGcra, 2, kMicrosPerMinute);
  const Limit other = *Limit::make(Algorithm::kSlidingLog, 2, kMicrosPerMinute);
  std::vector<std::string> names;
  for (int i = 0; i < keys; ++i) names.push_back("caller-" + std::to_string(i));
  for (const std::string& name : names) {
    ASSERT_TRUE(store.check(name, limit, 2)->allowed);
    ASSERT_FALSE(store.check(name, limit, 1)->allowed);
    ASSERT_TRUE(store.check(name, other, 1)->allowed);
  }
  std::vector<KeyedLimit> request;
  for (const std::string& name : names) request.push_back({name, &limit});
  request.push_back({"never-seen", &limit});
  auto made = StoreRequest::make(request, 0, std::nullopt, Operation::kReset);
  ASSERT_TRUE(made.has_value());
  auto done = store.decide_and_wait(*made);
  ASSERT_TRUE(done.has_value()) << done.error().message;
  ASSERT_EQ(done->size(), names.size() + 1);
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_TRUE((*done)[i].allowed) << names[i];
  EXPECT_FALSE(done->back().allowed);
  for (const std::string& name : names) {
    EXPECT_EQ(store.check(name, limit, 0)->remaining, 2) << name;  // fresh
    EXPECT_EQ(store.check(name, other, 0)->remaining, 1) << name;  // untouched
  }
}

TEST(RedisReset, DeletesTheKeysAndSaysWhichHeldState) {
  testing::RedisServer server;
  auto store = open_reset_store(server.url(), "reset");
  expect_reset_forgets(*store, 5);
}

TEST(RedisResetCluster, DeletesKeysOfEverySlot) {
  testing::RedisCluster& cluster = testing::shared_cluster();
  auto store = open_reset_store(cluster.url(), "reset");
  expect_reset_forgets(*store, 12);  // digests of 12 callers: several slots, several nodes
}

}  // namespace
}  // namespace spillway
