// The Redis tenant directory (src/redis/redis_tenants.h) on a real redis-server and a real Redis
// Cluster: a write through one directory is in another's copy within a second; a reader whose
// log entries were trimmed, or whose Redis lost the keys, loads every record again and ends
// with exactly what Redis holds; records are stored under digests; a bulk write is pipelined.
#include "src/redis/redis_tenants.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "tests/support/poll.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway::redis {
namespace {

using testing::wait_until;

std::unique_ptr<RedisTenantDirectory> open_on(const std::string& url, const std::string& prefix,
                                              RedisTenantOptions options = {}) {
  RedisStoreOptions store;
  store.url = url;
  store.key_prefix = prefix;
  auto directory = RedisTenantDirectory::open(store, std::move(options));
  EXPECT_TRUE(directory.has_value()) << (directory ? "" : directory.error().message);
  if (!directory) return nullptr;
  EXPECT_TRUE((*directory)->wait_ready(std::chrono::seconds(5)));
  return std::move(*directory);
}

std::string metrics_of(const TenantDirectory& directory) {
  std::string out;
  directory.append_metrics(out);
  return out;
}

// The follower's reads so far (spillway_tenants_reads_total); -1 when the line is missing.
long long tenant_reads_of(const TenantDirectory& directory) {
  const std::string text = metrics_of(directory);
  const std::string name = "\nspillway_tenants_reads_total ";
  const std::size_t at = text.find(name);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size()));
}

// A write through `a` is in `b`'s copy; returns how long it took to get there.
std::chrono::milliseconds propagation(RedisTenantDirectory& a, RedisTenantDirectory& b,
                                      const std::string& key, const std::string& plan) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(a.put(key, {.plan = plan}).has_value());
  EXPECT_TRUE(wait_until(
      [&] {
        auto found = b.find(key);
        return found != nullptr && found->plan == plan;
      },
      std::chrono::seconds(3)));
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

class RedisTenants : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testing::RedisServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static testing::RedisServer* server_;
};
testing::RedisServer* RedisTenants::server_ = nullptr;

TEST_F(RedisTenants, AWriteThroughOneIsInTheOthersCopyWithinASecond) {
  auto a = open_on(server_->url(), "follow");
  auto b = open_on(server_->url(), "follow");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 5; ++i) {
    const auto took = propagation(*a, *b, "k" + std::to_string(i), i % 2 ? "pro" : "free");
    EXPECT_LT(took, std::chrono::seconds(1)) << "change " << i;
  }
  // Deletes and blocks follow too, and the writer's own copy has them when put() returns.
  ASSERT_TRUE(a->put("k0", {.blocked = true}).has_value());
  ASSERT_NE(a->find("k0"), nullptr);
  EXPECT_TRUE(a->find("k0")->blocked);
  ASSERT_TRUE(b->erase("k1").has_value());
  EXPECT_EQ(b->find("k1"), nullptr);
  EXPECT_TRUE(wait_until([&] { return a->find("k1") == nullptr; }, std::chrono::seconds(2)));
  EXPECT_TRUE(
      wait_until([&] { return b->find("k0") && b->find("k0")->blocked; }, std::chrono::seconds(2)));
  EXPECT_EQ(a->size(), 4u);
  EXPECT_TRUE(wait_until([&] { return b->size() == 4u; }, std::chrono::seconds(2)));
  // The record before comes from Redis, whoever wrote it.
  auto before = a->put("k0", {.plan = "pro"});
  ASSERT_TRUE(before.has_value());
  ASSERT_TRUE(before->has_value());
  EXPECT_TRUE((*before)->blocked);
}

TEST_F(RedisTenants, ANewInstanceLoadsEveryRecordAtStart) {
  auto a = open_on(server_->url(), "start");
  ASSERT_NE(a, nullptr);
  std::vector<std::pair<std::string, TenantRecord>> records;
  for (int i = 0; i < 2500; ++i)
    records.emplace_back("key-" + std::to_string(i), TenantRecord{.plan = "pro"});
  auto written = a->put_many(records);
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_EQ(*written, 2500u);
  auto b = open_on(server_->url(), "start");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->size(), 2500u);
  ASSERT_NE(b->find("key-2499"), nullptr);
  EXPECT_EQ(server_->cli("HLEN start:{tenants}:records"), "2500\n");
  // Ids are digests: no key in clear in the hash.
  EXPECT_EQ(server_->cli("HSCAN start:{tenants}:records 0 MATCH *key-* COUNT 10000").find("key-"),
            std::string::npos);
}

TEST_F(RedisTenants, AReaderWhoseLogWasTrimmedLoadsEverythingAgain) {
  auto a = open_on(server_->url(), "trim");
  auto b = open_on(server_->url(), "trim", {.poll_interval = std::chrono::seconds(2)});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->put("early", {.plan = "pro"}).has_value());
  // b polls again two seconds after its first load: meanwhile the log loses what it missed.
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(a->put("t" + std::to_string(i), {.plan = "pro"}).has_value());
  ASSERT_TRUE(a->erase("early").has_value());
  server_->cli("XTRIM trim:{tenants}:log MAXLEN 0");
  ASSERT_TRUE(wait_until([&] { return b->size() == 20u && b->find("early") == nullptr; },
                         std::chrono::seconds(6)));
  EXPECT_NE(metrics_of(*b).find("spillway_tenants_reloads_total 2"), std::string::npos)
      << metrics_of(*b);
  EXPECT_EQ(std::to_string(b->applied_seq()) + "\n", server_->cli("GET trim:{tenants}:seq"));
}

TEST_F(RedisTenants, AReaderWhoseRedisLostTheKeysEndsWithWhatRedisHolds) {
  auto a = open_on(server_->url(), "lost");
  auto b = open_on(server_->url(), "lost");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(a->put("x" + std::to_string(i), {.plan = "pro"}).has_value());
  ASSERT_TRUE(wait_until([&] { return b->size() == 5u; }, std::chrono::seconds(2)));
  server_->cli("DEL lost:{tenants}:records lost:{tenants}:log lost:{tenants}:seq");
  ASSERT_TRUE(a->put("after", {.plan = "free"}).has_value());
  ASSERT_TRUE(wait_until([&] { return b->size() == 1u && b->find("after") != nullptr; },
                         std::chrono::seconds(3)))
      << b->size();
}

// The keys lost and written again up to the same sequence number before a reader polls (FLUSHALL,
// a restart without persistence, a failover to a replica behind): the reader's last entry is
// another one now, so it loads everything and ends with exactly what Redis holds.
TEST_F(RedisTenants, AReaderNoticesTheKeysWereReplacedUpToItsOwnSequence) {
  auto a = open_on(server_->url(), "replaced");
  auto b = open_on(server_->url(), "replaced", {.poll_interval = std::chrono::seconds(2)});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->put("old-1", {.plan = "pro"}).has_value());
  ASSERT_TRUE(a->put("old-2", {.plan = "pro"}).has_value());
  ASSERT_TRUE(wait_until([&] { return b->size() == 2u; }, std::chrono::seconds(4)));
  // b sleeps two seconds now: the keys go, and two new writes bring the sequence back to 2.
  server_->cli("DEL replaced:{tenants}:records replaced:{tenants}:log replaced:{tenants}:seq");
  ASSERT_TRUE(a->put("new-1", {.plan = "free"}).has_value());
  ASSERT_TRUE(a->put("new-2", {.plan = "free"}).has_value());
  ASSERT_EQ(server_->cli("GET replaced:{tenants}:seq"), "2\n");
  ASSERT_TRUE(wait_until(
      [&] { return b->find("old-1") == nullptr && b->find("new-2") != nullptr && b->size() == 2u; },
      std::chrono::seconds(6)))
      << b->size();
  EXPECT_NE(metrics_of(*b).find("spillway_tenants_reloads_total 2"), std::string::npos);
}

// Keys lost one at a time: a lost sequence key does not stop writes (it continues from the
// log's last id), and a lost log does not make readers reload on every poll.
TEST_F(RedisTenants, ALostSequenceKeyOrLogIsWrittenAndFollowedAgain) {
  auto a = open_on(server_->url(), "partial");
  auto b = open_on(server_->url(), "partial");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(a->put("p" + std::to_string(i), {.plan = "pro"}).has_value());
  server_->cli("DEL partial:{tenants}:seq");
  auto after = a->put("p3", {.plan = "free"});
  ASSERT_TRUE(after.has_value()) << after.error().message;
  EXPECT_EQ(server_->cli("GET partial:{tenants}:seq"), "4\n");
  EXPECT_TRUE(wait_until([&] { return b->find("p3") != nullptr; }, std::chrono::seconds(2)));
  server_->cli("DEL partial:{tenants}:log");
  ASSERT_TRUE(wait_until(
      [&] { return metrics_of(*b).find("spillway_tenants_reloads_total 2") != std::string::npos; },
      std::chrono::seconds(3)))
      << metrics_of(*b);
  const long long reads = tenant_reads_of(*b);
  ASSERT_GE(reads, 0) << metrics_of(*b);
  ASSERT_TRUE(
      wait_until([&] { return tenant_reads_of(*b) >= reads + 6; }, std::chrono::seconds(10)))
      << "six more polls";
  EXPECT_NE(metrics_of(*b).find("spillway_tenants_reloads_total 2"), std::string::npos)
      << metrics_of(*b);
  ASSERT_TRUE(a->put("p4", {.plan = "pro"}).has_value());
  EXPECT_TRUE(wait_until([&] { return b->find("p4") != nullptr && b->size() == 5u; },
                         std::chrono::seconds(3)))
      << b->size();
}

TEST_F(RedisTenants, WhileRedisIsDownTheCopyKeepsServingAndWritesFail) {
  testing::RedisServer own;
  RedisStoreOptions store;
  store.url = own.url();
  auto a = RedisTenantDirectory::open(store, {.timeout = std::chrono::milliseconds(300)});
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE((*a)->wait_ready(std::chrono::seconds(5)));
  ASSERT_TRUE((*a)->put("k", {.plan = "pro"}).has_value());
  own.stop();
  auto failed = (*a)->put("k2", {.plan = "pro"});
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.error().code, Errc::kInvalidArgument);
  EXPECT_EQ((*a)->find("k2"), nullptr);
  ASSERT_NE((*a)->find("k"), nullptr);  // what it had, it keeps
  own.start();
  EXPECT_TRUE(wait_until([&] { return (*a)->put("k3", {.plan = "pro"}).has_value(); },
                         std::chrono::seconds(5)));
}

// Byte for byte the text this directory wrote by hand before it used src/core/metrics_text.h,
// each sample's value replaced by N (the follower's reads go on meanwhile).
TEST_F(RedisTenants, MetricsTextIsAsBefore) {
  auto directory = open_on(server_->url(), "metrics-text");
  ASSERT_NE(directory, nullptr);
  const std::string text =
      std::regex_replace(metrics_of(*directory), std::regex("\n([a-z_]+) -?[0-9]+\n"), "\n$1 N\n");
  EXPECT_EQ(
      text,
      "# HELP spillway_tenants Tenant records in this process's copy.\n"
      "# TYPE spillway_tenants gauge\n"
      "spillway_tenants N\n"
      "# HELP spillway_tenants_sequence The last change to the tenant records this copy "
      "applied.\n# TYPE spillway_tenants_sequence gauge\nspillway_tenants_sequence N\n"
      "# HELP spillway_tenants_reloads_total Full loads of the tenant records from Redis.\n"
      "# TYPE spillway_tenants_reloads_total counter\nspillway_tenants_reloads_total N\n"
      "# HELP spillway_tenants_reads_total Script calls this instance's follower made to read "
      "the change log or every record (about ten a second when nothing changes).\n"
      "# TYPE spillway_tenants_reads_total counter\nspillway_tenants_reads_total N\n"
      "# HELP spillway_counter_resets_heard_total Counter resets read from the change log "
      "(any instance's): each made this instance forget the denials it remembers.\n"
      "# TYPE spillway_counter_resets_heard_total counter\n"
      "spillway_counter_resets_heard_total N\n"
      "# HELP spillway_tenants_errors_total Failed reads of the tenant records, and records "
      "that could not be decoded.\n# TYPE spillway_tenants_errors_total counter\n"
      "spillway_tenants_errors_total N\n");
}

TEST(RedisTenantsCluster, AWriteThroughOneIsInTheOthersCopyOnACluster) {
  testing::RedisCluster& cluster = testing::shared_cluster();
  auto a = open_on(cluster.url(), "cl");
  auto b = open_on(cluster.url(), "cl");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT(propagation(*a, *b, "c" + std::to_string(i), "pro"), std::chrono::seconds(1));
  }
  std::vector<std::pair<std::string, TenantRecord>> records;
  for (int i = 0; i < 3000; ++i)
    records.emplace_back("bulk-" + std::to_string(i), TenantRecord{.plan = "free"});
  ASSERT_TRUE(a->put_many(records).has_value());
  EXPECT_TRUE(wait_until([&] { return b->size() == 3003u; }, std::chrono::seconds(5))) << b->size();
}

}  // namespace
}  // namespace spillway::redis
