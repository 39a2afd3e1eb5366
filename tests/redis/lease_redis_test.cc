// Quota leases on every Redis backend (docs/SPEC.md §2.3): two LeaseStores, each over its own
// connection (two processes' worth), share one limit on one Redis, a Redis Cluster, a primary
// named by Sentinels, and a Redis over TLS. With times given (`now`, so nothing refills while a
// test runs), the two together admit exactly the limit (every admitted unit was charged in Redis
// first, and an instance only denies once its lease is empty and Redis refused it), leases that
// end are given back through Redis' own refund rule, and a third connection sees the shared key
// charged exactly what was admitted.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "spillway/lease_store.h"
#include "spillway/redis_store.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_sentinel.h"
#include "tests/support/redis_server.h"
#include "tests/support/reservation_checks.h"
#include "tests/support/tls_certs.h"

namespace spillway {
namespace {

using testing::kReserveNow;

std::unique_ptr<LeaseStore> leased(const std::string& url, const std::string& prefix) {
  std::unique_ptr<RedisStore> redis = testing::open_ready_store(url, prefix);
  if (!redis) return nullptr;
  return std::make_unique<LeaseStore>(
      std::move(redis), LeaseStoreOptions{.sweep_interval = std::chrono::milliseconds(0)});
}

bool admit(LeaseStore& store, std::string_view key, const Limit& limit, const LeaseSpec& spec,
           Micros now) {
  const KeyedLimit k[] = {{key, &limit, kRequestCost, &spec}};
  Result<Decisions> d = store.check_all(k, 1, now);
  EXPECT_TRUE(d.has_value()) << d.error().message;
  return d && d->front().allowed;
}

// Two instances share `url`: together exactly the limit, in few calls; leftovers given back.
void two_instances_share_one_limit(const std::string& url, const std::string& prefix) {
  std::unique_ptr<LeaseStore> a = leased(url, prefix);
  std::unique_ptr<LeaseStore> b = leased(url, prefix);
  std::unique_ptr<RedisStore> observer = testing::open_ready_store(url, prefix);
  ASSERT_TRUE(a && b && observer);

  // A fixed window of an hour: 300 units, leases of at most 10 % (30).
  const Limit window = *Limit::make(Algorithm::kFixedWindow, 300, kMicrosPerHour);
  const LeaseSpec spec{.max_age = kMicrosPerHour, .max_share_permille = 100};
  int admitted = 0;
  // Twice as much demand on a as on b, 1,500 checks in all: both run dry.
  for (int i = 0; i < 1'500; ++i) {
    LeaseStore& who = i % 3 == 0 ? *b : *a;
    admitted += admit(who, "shared", window, spec, kReserveNow + i) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 300) << "together: exactly the limit, no more and none stranded";
  const LeaseStore::Counts ca = a->counts();
  const LeaseStore::Counts cb = b->counts();
  EXPECT_EQ(ca.used + cb.used, 300);
  EXPECT_LT(ca.acquire_calls + cb.acquire_calls, 100u) << "leases, not one call per check";
  Result<Decision> seen = observer->check("shared", window, 0, kReserveNow + 3'000);
  ASSERT_TRUE(seen.has_value()) << seen.error().message;
  EXPECT_EQ(seen->remaining, 0);

  // A lease's leftover comes back: a GCRA key that no one else touched is refunded exactly.
  const Limit bucket = *Limit::make(Algorithm::kGcra, 1'000, kMicrosPerHour);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(admit(*a, "refund", bucket, spec, kReserveNow + i));
  const std::int64_t held = a->counts().held;
  EXPECT_GT(held, 0) << "the second lease follows demand";
  a->release_all();
  EXPECT_EQ(a->counts().held, 0);
  EXPECT_EQ(a->counts().returned, held);
  Result<Decision> refunded = observer->check("refund", bucket, 0, kReserveNow + 10);
  ASSERT_TRUE(refunded.has_value()) << refunded.error().message;
  EXPECT_EQ(refunded->remaining, 995) << "charged exactly the 5 admitted";
}

TEST(RedisLease, TwoInstancesShareOneLimitExactly) {
  testing::RedisServer redis;
  two_instances_share_one_limit(redis.url(), "lease");
}

TEST(RedisLeaseCluster, TwoInstancesShareOneLimitExactly) {
  two_instances_share_one_limit(testing::shared_cluster().url(), "lease-cluster");
}

TEST(Sentinel, LeasesShareOneLimitExactlyThroughTheSentinels) {
  testing::SentinelGroup group("spillway-lease");
  two_instances_share_one_limit(group.url(), "lease-sentinel");
}

TEST(Tls, LeasesShareOneLimitExactlyOverTls) {
  testing::RedisServer redis(testing::RedisServer::Tls{.require_client_cert = true});
  two_instances_share_one_limit(redis.url(), "lease-tls");
}

// Redis goes away: leases already held keep deciding; a new one gets the error.
TEST(RedisLease, HeldLeasesDecideWhileRedisIsDownThenTheErrorComes) {
  testing::RedisServer redis;
  std::unique_ptr<LeaseStore> a = leased(redis.url(), "lease-down");
  ASSERT_TRUE(a);
  const Limit limit = *Limit::make(Algorithm::kGcra, 100'000, kMicrosPerHour);
  const LeaseSpec spec{.max_age = 60 * kMicrosPerSecond, .max_share_permille = 10};  // cap 1,000
  ASSERT_TRUE(admit(*a, "down", limit, spec, kReserveNow));
  ASSERT_TRUE(admit(*a, "down", limit, spec, kReserveNow + 1));  // a lease of the cap
  redis.stop();
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(admit(*a, "down", limit, spec, kReserveNow + 2 + i)) << i;
  }
  const KeyedLimit k[] = {{"down", &limit, kRequestCost, &spec}};
  Result<Decisions> after = a->check_all(k, 1, kReserveNow + 61 * kMicrosPerSecond);
  ASSERT_FALSE(after.has_value()) << "a new lease needs Redis";
  EXPECT_TRUE(after.error().code == Errc::kUnavailable || after.error().code == Errc::kTimeout)
      << after.error().message;
}

}  // namespace
}  // namespace spillway
