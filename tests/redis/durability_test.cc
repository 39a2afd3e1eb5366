// backend.durability: replicated (RedisStoreOptions::replica_acks): a decision is answered only
// once a replica holds its write, and fails, naming why, when none acknowledges it in time. The
// failover these protect against is measured in tests/faults/failover_faults_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "spillway/redis_store.h"
#include "tests/support/poll.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

// A replica of `primary`, in sync (master_link_status:up).
std::unique_ptr<testing::RedisServer> durability_replica_of(const testing::RedisServer& primary) {
  auto replica = std::make_unique<testing::RedisServer>(
      "replicaof 127.0.0.1 " + std::to_string(primary.port()) + "\nrepl-diskless-sync no\n");
  EXPECT_TRUE(testing::wait_until(
      [&] {
        return replica->cli("INFO replication").find("master_link_status:up") != std::string::npos;
      },
      20s))
      << replica->log();
  return replica;
}

TEST(RedisDurability, AnAdmissionIsAnsweredOnlyOnceAReplicaHoldsItsCharge) {
  testing::RedisServer primary;
  const auto replica = durability_replica_of(primary);
  auto store = RedisStore::open(
      {.url = primary.url(), .key_prefix = "durable", .timeout = 2000ms, .replica_acks = 1});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const Limit limit = *Limit::make(Algorithm::kGcra, 5, kMicrosPerMinute);
  for (int i = 0; i < 20; ++i) {
    const std::string key = "k" + std::to_string(i);
    Result<Decision> decision = (*store)->check(key, limit);
    ASSERT_TRUE(decision.has_value()) << decision.error().message;
    EXPECT_TRUE(decision->allowed);
    // At the moment of the answer the replica has the charge: no poll, no wait.
    EXPECT_EQ(replica->cli("EXISTS " + (*store)->storage_key(key, limit)), "1\n") << key;
  }
}

TEST(RedisDurability, WithNoReplicaToAcknowledgeEveryWriteFailsNamingWhy) {
  testing::RedisServer primary;
  auto store = RedisStore::open(
      {.url = primary.url(), .key_prefix = "lonely", .timeout = 3000ms, .replica_acks = 1});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  // gcra: the key lives 12 s after one charge (a fixed window's may end a moment later).
  const Limit limit = *Limit::make(Algorithm::kGcra, 5, kMicrosPerMinute);
  // The very first call finds no script on the server (NOSCRIPT); its EVAL may wait behind the
  // first WAIT on a connection and fail otherwise. Then the script is there.
  const auto acknowledged_by_none = [](const Result<Decision>& d) {
    return !d && d.error().message.find("acknowledged by") != std::string::npos;
  };
  Result<Decision> decision = (*store)->check("k", limit);
  for (int i = 0; i < 5 && !decision && !acknowledged_by_none(decision); ++i) {
    decision = (*store)->check("k", limit);
  }
  ASSERT_FALSE(decision.has_value()) << "admitted without a replica";
  EXPECT_EQ(decision.error().code, Errc::kUnavailable);
  EXPECT_NE(decision.error().message.find("acknowledged by 0 of 1 replica within"),
            std::string::npos)
      << decision.error().message;
  EXPECT_NE(decision.error().message.find("backend.durability: replicated"), std::string::npos)
      << decision.error().message;
  // The write ran on the primary (charged, never admitted: on_error deny under-admits).
  EXPECT_EQ(primary.cli("EXISTS " + (*store)->storage_key("k", limit)), "1\n");
  // Readiness says so too: the probe writes, and waits for the replica as a check does.
  EXPECT_FALSE((*store)->probe().has_value());
}

TEST(RedisDurability, ReplicaAcksOutOfRangeAreRefused) {
  for (const int acks : {-1, 17}) {
    auto store = RedisStore::open({.url = "redis://127.0.0.1:6379", .replica_acks = acks});
    ASSERT_FALSE(store.has_value()) << acks;
    EXPECT_EQ(store.error().code, Errc::kInvalidArgument);
    EXPECT_NE(
        store.error().message.find("replica_acks must be 0 to 16, got " + std::to_string(acks)),
        std::string::npos)
        << store.error().message;
  }
}

}  // namespace
}  // namespace spillway
