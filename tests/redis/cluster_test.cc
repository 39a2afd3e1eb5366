// The Redis backend on a real Redis Cluster (3 primaries + 3 replicas on loopback): URLs and
// seeds, slot routing against the cluster's own CLUSTER KEYSLOT, reserve-then-refund across
// slots (a property test of the refund against a replayed model), resharding and failover under
// load, SCRIPT FLUSH on every node, and a TTL on every key of every node. The conformance and
// differential suites run on the cluster too (redis_store_test.cc, check_all_test.cc).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "src/redis/client.h"
#include "src/redis/key_slot.h"
#include "src/redis/script_reply.h"
#include "src/redis/scripts.h"
#include "src/redis/url.h"
#include "tests/support/fault_proxy.h"
#include "tests/support/key_audit.h"
#include "tests/support/process.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using testing::RedisCluster;
using testing::RedisServer;

std::string unique_prefix() {
  static std::atomic<int> counter{0};
  return "cl" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

std::unique_ptr<RedisStore> open_on(const std::string& url, const std::string& prefix,
                                    std::chrono::milliseconds timeout = 2000ms,
                                    bool dry_run_first = true) {
  auto store = RedisStore::open({.url = url,
                                 .key_prefix = prefix,
                                 .timeout = timeout,
                                 .ttl_floor = std::chrono::minutes(5),
                                 .cluster_dry_run_first = dry_run_first});
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  return store ? std::move(*store) : nullptr;
}

// A user key whose stored key (under `limit` and the store's prefix) hashes to `slot`: found by
// trying key names, as an application's keys would fall.
std::string key_on(const RedisStore& store, const Limit& limit, const std::string& stem,
                   std::uint16_t slot) {
  for (int i = 0; i < 2'000'000; ++i) {
    const std::string key = stem + std::to_string(i);
    if (redis::key_slot(store.storage_key(key, limit)) == slot) return key;
  }
  throw std::runtime_error("no key found for the slot");
}

// ------------------------------------------------------------------------------------------------
// URLs, seeds and the slot function.
// ------------------------------------------------------------------------------------------------

TEST(ClusterUrl, ParsesSeedsAndCredentials) {
  auto url = redis::parse_cluster_url("redis+cluster://app:s%40cret@10.0.0.1:7000,[::1]:7001,h");
  ASSERT_TRUE(url.has_value()) << url.error().message;
  ASSERT_EQ(url->seeds.size(), 3u);
  EXPECT_EQ(url->seeds[0].text(), "10.0.0.1:7000");
  EXPECT_EQ(url->seeds[1].text(), "::1:7001");
  EXPECT_EQ(url->seeds[2].text(), "h:6379");
  EXPECT_EQ(url->node_options.user, "app");
  EXPECT_EQ(url->node_options.password, "s@cret");
}

TEST(ClusterUrl, BadUrlsAreRejectedNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"redis+cluster://", "empty seed"},           {"redis+cluster://a:1,,b:2", "empty seed"},
      {"redis+cluster://a:1/2", "only database 0"}, {"redis+cluster://a:99999", "port"},
      {"redis+cluster://user@a:1", "user info"},
  };
  for (const auto& [text, mentions] : cases) {
    auto url = redis::parse_cluster_url(text);
    ASSERT_FALSE(url.has_value()) << text;
    EXPECT_NE(url.error().message.find(mentions), std::string::npos)
        << text << " -> " << url.error().message;
    auto store = RedisStore::open({.url = text});
    ASSERT_FALSE(store.has_value()) << text;
    EXPECT_EQ(store.error().code, Errc::kInvalidArgument) << text;
  }
}

TEST(ClusterOpen, SeedsThatAreNotAClusterGiveAnErrorNamingEachSeed) {
  RedisServer plain;  // not in cluster mode
  const std::uint16_t nobody = testing::free_port();
  auto store = RedisStore::open({.url = "redis+cluster://127.0.0.1:" + std::to_string(nobody) +
                                        ",127.0.0.1:" + std::to_string(plain.port()),
                                 .timeout = 500ms});
  ASSERT_FALSE(store.has_value());
  const std::string& message = store.error().message;
  EXPECT_EQ(store.error().code, Errc::kUnavailable);
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(nobody)), std::string::npos) << message;
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(plain.port())), std::string::npos)
      << message;
  EXPECT_NE(message.find("cluster support disabled"), std::string::npos) << message;
}

TEST(ClusterServe, ExitsAtStartNamingAClusterThatCannotBeReached) {
  const std::uint16_t nobody = testing::free_port();
  const testing::BinaryRun run = testing::run_binary(
      "serve --listen 127.0.0.1:0 --backend redis+cluster://127.0.0.1:" + std::to_string(nobody));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("no seed node gave the slot map"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(std::to_string(nobody)), std::string::npos) << run.err;
}

TEST(ClusterSlots, OurSlotOfEveryKeyIsTheClusters) {
  RedisServer& node = *testing::shared_cluster().nodes().front();
  redis::Client client({.port = node.port()});
  std::mt19937 random(20261201);
  for (int i = 0; i < 2000; ++i) {
    // Any bytes, with braces often enough that hash tags of every shape occur.
    std::string key;
    const int length = 1 + static_cast<int>(random() % 24);
    for (int c = 0; c < length; ++c) {
      const unsigned pick = random() % 8;
      key += pick == 0 ? '{' : pick == 1 ? '}' : static_cast<char>(random() % 256);
    }
    Result<redis::Reply> answer = client.call({"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(answer && answer->type == redis::Reply::Type::kInteger);
    ASSERT_EQ(redis::key_slot(key), answer->integer) << "key of " << key.size() << " bytes";
  }
}

// ------------------------------------------------------------------------------------------------
// Reserve, then refund. Property: the refund script restores a key exactly when nothing wrote
// it after the charge, and the state is then the one a model that never saw the charge has;
// otherwise the charge stays (under-admission, never over-admission). Random interleavings of
// checks, reservations and late refunds on one node, every decision compared with the model.
// ------------------------------------------------------------------------------------------------

struct Op {
  std::string key;
  std::int64_t cost;
  Micros now;
};

// The model: the operations that are charged, replayed in order on a fresh memory store.
Decision replay(const std::vector<Op>& charged, const Op& next, const Limit& limit) {
  MemoryStore memory;
  for (const Op& op : charged) (void)memory.check(op.key, limit, op.cost, op.now);
  return *memory.check(next.key, limit, next.cost, next.now);
}

// EVAL of `source` over `keys` keys (the arguments follow).
std::vector<std::string> script_args(std::string_view source, std::size_t keys) {
  return {"EVAL", std::string(source), std::to_string(keys)};
}

RC_GTEST_PROP(ReserveRefund, RefundRestoresExactlyWhenUntouchedAndElseKeepsTheCharge, ()) {
  static RedisServer* server = new RedisServer();
  static redis::Client* client = new redis::Client({.port = server->port(), .timeout = 2000ms});
  const Algorithm algorithm =
      *rc::gen::elementOf(std::vector<Algorithm>(std::begin(kAlgorithms), std::end(kAlgorithms)));
  const std::int64_t limit_value = *rc::gen::inRange<std::int64_t>(1, 6);
  std::optional<std::int64_t> burst;
  if (takes_burst(algorithm)) burst = *rc::gen::inRange<std::int64_t>(1, 6);
  const Limit limit = *Limit::make(algorithm, limit_value, 1000, burst);
  const std::string prefix = unique_prefix() + ":";

  struct Reservation {
    std::size_t op;  // its index in `ops`
    std::vector<std::string> undo;
    bool refunded = false;
  };
  std::vector<Op> ops;        // every operation that charged, in order (the charged log)
  std::vector<bool> charged;  // whether ops[i] still counts
  std::vector<Reservation> reservations;
  Micros now = 5'000;
  const int steps = *rc::gen::inRange(1, 30);
  for (int step = 0; step < steps; ++step) {
    now += *rc::gen::inRange<Micros>(0, 400);
    const int what = *rc::gen::inRange(0, 3);
    const std::string key = *rc::gen::element<std::string>("a", "b");
    std::vector<Op> live;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (charged[i]) live.push_back(ops[i]);
    }
    if (what == 2) {  // refund a pending reservation, possibly long after
      std::vector<std::size_t> pending;
      for (std::size_t r = 0; r < reservations.size(); ++r) {
        if (!reservations[r].refunded) pending.push_back(r);
      }
      if (pending.empty()) continue;
      Reservation& r = reservations[*rc::gen::elementOf(pending)];
      r.refunded = true;
      const Op& reserved = ops[r.op];
      // Did a later op that still counts write the same key? (A later reservation that was
      // itself refunded left no trace.)
      bool touched = false;
      for (std::size_t i = r.op + 1; i < ops.size(); ++i) {
        touched = touched || (charged[i] && ops[i].key == reserved.key);
      }
      std::vector<std::string> args = script_args(redis::refund_script_source(), 1);
      args.push_back(prefix + reserved.key);
      args.insert(args.end(), r.undo.begin(), r.undo.end());
      Result<redis::Reply> restored = client->call(args);
      RC_ASSERT(restored.has_value());
      RC_ASSERT(restored->type == redis::Reply::Type::kInteger);
      RC_ASSERT(restored->integer == (touched ? 0 : 1));
      if (!touched) charged[r.op] = false;
      continue;
    }
    const Op op{key, *rc::gen::inRange<std::int64_t>(0, limit_value + 1), now};
    const Decision expected = replay(live, op, limit);
    Decision got;
    std::vector<std::string> undo;
    if (what == 0) {  // a plain check, through the single-algorithm script
      std::vector<std::string> args = {"EVAL",
                                       std::string(redis::script_source(algorithm)),
                                       "1",
                                       prefix + key,
                                       std::to_string(now),
                                       "300000"};
      for (std::int64_t n : {limit.limit(), limit.period(), limit.burst(), limit.limit_units(),
                             limit.period_units(), limit.max_delay(), limit.reserved(), op.cost}) {
        args.push_back(std::to_string(n));
      }
      Result<redis::Reply> reply = client->call(args);
      RC_ASSERT(reply.has_value());
      got = *redis::packed_decision_at(*reply, 0, limit.limit());
    } else {  // a reservation: the all-or-nothing script in reserve mode, one key
      std::vector<std::string> args = script_args(redis::all_or_nothing_script_source(), 1);
      args.insert(args.end(), {prefix + key, std::to_string(now), "300000", "1", ""});
      for (std::int64_t n : {static_cast<std::int64_t>(algorithm_index(algorithm)), limit.limit(),
                             limit.period(), limit.burst(), limit.limit_units(),
                             limit.period_units(), limit.max_delay(), limit.reserved(), op.cost}) {
        args.push_back(std::to_string(n));
      }
      Result<redis::Reply> reply = client->call(args);
      RC_ASSERT(reply.has_value());
      got = *redis::decision_at(*reply, 0);
      if (got.allowed) {
        // The decision, the peek before it, then what undoes the charge.
        constexpr std::size_t kUndo = 2 * redis::kFieldsPerDecision;
        RC_ASSERT(reply->elements.size() == kUndo + 3);
        const auto& e = reply->elements;
        undo = {e[kUndo].text, std::to_string(e[kUndo + 1].integer), e[kUndo + 2].text};
      }
    }
    RC_ASSERT(got == expected);
    if (got.allowed && op.cost > 0) {
      ops.push_back(op);
      charged.push_back(true);
      if (what == 1) reservations.push_back({ops.size() - 1, std::move(undo)});
    }
  }
}

// Through the store: a request that one slot denies leaves the other slots as they were, with
// the dry run first (nothing charged) and without it (charged, then refunded).
class ClusterCheckAll : public ::testing::TestWithParam<bool> {};

TEST_P(ClusterCheckAll, ADenialOnOneSlotLeavesTheOthersExactlyAsTheyWere) {
  auto store = open_on(testing::shared_cluster().url(), unique_prefix(), 2000ms, GetParam());
  const Limit edge = *Limit::make(Algorithm::kGcra, 5, kMicrosPerMinute);
  const Limit gateway = *Limit::make(Algorithm::kFixedWindow, 1, kMicrosPerMinute);
  const Limit endpoint = *Limit::make(Algorithm::kSlidingLog, 3, kMicrosPerMinute);
  const std::string a = key_on(*store, edge, "ip", 100);
  const std::string b = key_on(*store, gateway, "key", 9000);
  const std::string c = key_on(*store, endpoint, "path", 15000);
  const std::vector<KeyedLimit> layers = {{a, &edge}, {b, &gateway}, {c, &endpoint}};
  const Micros now = 1'000'000;
  auto first = store->check_all(layers, 1, now);
  ASSERT_TRUE(first && all_allowed(*first));
  // The gateway (1 per minute) denies now: the edge and endpoint charges are refunded.
  auto denied = store->check_all(layers, 1, now + 10);
  ASSERT_TRUE(denied.has_value()) << denied.error().message;
  EXPECT_FALSE((*denied)[1].allowed);
  EXPECT_TRUE((*denied)[0].allowed);
  EXPECT_EQ((*denied)[0].remaining, 4) << "reports the edge as it stands, uncharged";
  EXPECT_EQ((*denied)[2].remaining, 2);
  // Peeks: nothing of the denied request is left on the edge and the endpoint.
  EXPECT_EQ(store->check(a, edge, 0, now + 20)->remaining, 4);
  EXPECT_EQ(store->check(c, endpoint, 0, now + 20)->remaining, 2);
}

INSTANTIATE_TEST_SUITE_P(DryRunFirst, ClusterCheckAll, ::testing::Bool());

// ------------------------------------------------------------------------------------------------
// Under load: resharding, failover, script flushes. Each test has a cluster of its own.
// ------------------------------------------------------------------------------------------------

// Threads that check `keys` (limit `limit` per day each) until stopped; counts per key.
class Load {
 public:
  Load(RedisStore& store, const Limit& limit, std::vector<std::string> keys, int threads = 4)
      : keys_(std::move(keys)), admitted_(keys_.size()), failed_(keys_.size()) {
    for (int t = 0; t < threads; ++t) {
      workers_.emplace_back([this, &store, limit, t] {
        for (std::size_t i = static_cast<std::size_t>(t); !stop_; i += 7) {
          const std::size_t k = i % keys_.size();
          const auto started = std::chrono::steady_clock::now();
          Result<Decision> d = store.check(keys_[k], limit);
          const auto took = std::chrono::steady_clock::now() - started;
          std::lock_guard lock(mutex_);
          ++checks_;
          longest_ = std::max(longest_, took);
          if (!d) {
            errors_.push_back(d.error().message);
            ++failed_[k];
          } else if (d->allowed) {
            ++admitted_[k];
          }
        }
      });
    }
  }
  ~Load() { stop(); }
  void stop() {
    stop_ = true;
    workers_.clear();
  }
  std::vector<std::string> errors() {
    std::lock_guard lock(mutex_);
    return errors_;
  }
  std::vector<int> admitted() {
    std::lock_guard lock(mutex_);
    return admitted_;
  }
  // Waits until every key has been admitted at least `n` times (false after `limit`): a slow
  // sanitizer build needs longer to get there.
  bool wait_for_each(int n, std::chrono::seconds limit = 60s) {
    return testing::wait_until(
        [&] {
          const std::vector<int> counts = admitted();
          return std::all_of(counts.begin(), counts.end(), [n](int c) { return c >= n; });
        },
        limit);
  }
  // Waits until `more` checks (answered or failed) have ended since the call: the load has run
  // on for a while, whatever the machine's speed. False after `limit`.
  bool wait_for_checks(long more, std::chrono::seconds limit = 30s) {
    const long target = checks() + more;
    return testing::wait_until([&] { return checks() >= target; }, limit);
  }
  // Per key, the checks that ended in an error (each may or may not have been charged).
  std::vector<int> failed() {
    std::lock_guard lock(mutex_);
    return failed_;
  }
  int total() {
    std::lock_guard lock(mutex_);
    int sum = 0;
    for (int n : admitted_) sum += n;
    return sum;
  }
  long checks() {
    std::lock_guard lock(mutex_);
    return checks_;
  }
  std::chrono::steady_clock::duration longest() {
    std::lock_guard lock(mutex_);
    return longest_;
  }

 private:
  std::vector<std::string> keys_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> errors_;
  std::vector<int> admitted_;
  std::vector<int> failed_;
  long checks_ = 0;
  std::chrono::steady_clock::duration longest_{};
  std::vector<std::jthread> workers_;
};

TEST(ClusterUnderLoad, ReshardingIsInvisibleAndExactWithAskAndMovedBothSeen) {
  RedisCluster cluster;
  auto store = open_on(cluster.url(), unique_prefix(), 3000ms);
  const Limit limit = *Limit::make(Algorithm::kGcra, 200, kMicrosPerDay);
  // Keys on a few slots, which then move to another primary while checks run.
  const std::vector<std::uint16_t> slots = {10, 5461, 12000};
  std::vector<std::string> keys;
  for (std::uint16_t slot : slots) {
    for (int i = 0; i < 4; ++i)
      keys.push_back(key_on(*store, limit, "r" + std::to_string(i) + "-", slot));
  }
  Load load(*store, limit, keys);
  ASSERT_TRUE(load.wait_for_checks(500)) << "the load does not run";
  int migrated = 0;
  for (std::uint16_t slot : slots) {
    RedisServer* from = cluster.owner_of(slot);
    ASSERT_NE(from, nullptr);
    RedisServer* to = nullptr;
    for (RedisServer* p : cluster.primaries()) {
      if (p != from) to = p;
    }
    migrated += cluster.move_slot(slot, *to, 30);
    EXPECT_TRUE(load.wait_for_checks(300)) << "the load stopped after a slot moved";
  }
  load.wait_for_each(200);
  // And a little more: nothing beyond the limit.
  EXPECT_TRUE(load.wait_for_checks(500)) << "the load stopped once the keys were full";
  load.stop();
  EXPECT_GT(migrated, 0) << "no live key was moved: the test proves nothing";
  EXPECT_TRUE(load.errors().empty())
      << load.errors().size()
      << " errors, first: " << (load.errors().empty() ? "" : load.errors()[0]);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    EXPECT_EQ(load.admitted()[k], 200) << keys[k] << " (checks " << load.checks() << ")";
  }
  const RedisStore::RoutingCounters counters = store->routing_counters();
  EXPECT_GT(counters.moved, 0u) << "MOVED was never met";
  EXPECT_GT(counters.ask, 0u) << "ASK was never met";
  std::printf("resharding: %d keys migrated, %ld checks, moved %llu, ask %llu, refreshes %llu\n",
              migrated, load.checks(), static_cast<unsigned long long>(counters.moved),
              static_cast<unsigned long long>(counters.ask),
              static_cast<unsigned long long>(counters.refreshes));
}

TEST(ClusterUnderLoad, ScriptFlushOnEveryNodeCostsNoError) {
  RedisCluster cluster;
  auto store = open_on(cluster.url(), unique_prefix());
  const Limit limit = *Limit::make(Algorithm::kSlidingWindow, 100'000, kMicrosPerDay);
  std::vector<std::string> keys;
  for (int i = 0; i < 30; ++i) keys.push_back("flush" + std::to_string(i));
  Load load(*store, limit, keys);
  for (int round = 0; round < 30; ++round) {
    cluster.on_every_node("SCRIPT FLUSH");
    EXPECT_TRUE(load.wait_for_checks(10)) << "no check ran after a flush";
  }
  load.stop();
  EXPECT_GT(load.checks(), 100);
  EXPECT_TRUE(load.errors().empty()) << load.errors()[0];
}

TEST(ClusterUnderLoad, ManualFailoverIsInvisibleAndAKilledPrimaryRecovers) {
  RedisCluster cluster(3, "", /*replicas=*/1);
  auto store = open_on(cluster.url(), unique_prefix(), 1000ms);
  const Limit limit = *Limit::make(Algorithm::kTokenBucket, 1'000'000, kMicrosPerDay);
  std::vector<std::string> keys;
  for (int i = 0; i < 30; ++i) keys.push_back("fo" + std::to_string(i));
  // 1. A coordinated failover (CLUSTER FAILOVER on a replica): no error at all. Writes pause on
  // the old primary until the replica takes over, so these checks get a longer timeout.
  {
    auto patient = open_on(cluster.url(), unique_prefix(), 3000ms);
    Load load(*patient, limit, keys);
    ASSERT_TRUE(load.wait_for_checks(300)) << "the load does not run";
    RedisServer* replica = cluster.replicas().front();
    EXPECT_NE(replica->cli("CLUSTER FAILOVER").find("OK"), std::string::npos);
    ASSERT_TRUE(testing::wait_until([&] { return replica->cli("ROLE").starts_with("master"); }));
    ASSERT_TRUE(cluster.wait_ok());
    EXPECT_TRUE(load.wait_for_checks(500)) << "the load stopped after the failover";
    load.stop();
    EXPECT_TRUE(load.errors().empty()) << load.errors().size() << ": " << load.errors()[0];
  }
  // 2. kill -9 of a primary: errors only until a replica is promoted, each within the timeout,
  // then every check succeeds again without a restart. The keys allow 200 per day (gcra, burst
  // 200), and the primary dies when about half of that is admitted, so writes are in flight.
  // A check that failed may have been charged (its script ran, the answer was lost), but none is
  // charged twice: admitted plus failed reaches 200 for every key. What a key admits beyond 200
  // is what the dead primary had not yet replicated (asynchronous replication), printed.
  const int daily_limit = 200;
  const Limit daily = *Limit::make(Algorithm::kGcra, daily_limit, kMicrosPerDay);
  Load load(*store, daily, keys);
  const int everything = daily_limit * static_cast<int>(keys.size());
  testing::wait_until([&] { return load.total() >= everything / 2; }, 30s);
  ASSERT_GE(load.total(), everything / 2) << "the load is too slow for the test to mean anything";
  RedisServer* victim = cluster.primaries().front();
  const auto killed_at = std::chrono::steady_clock::now();
  victim->stop();
  ASSERT_TRUE(cluster.wait_ok(30)) << "no replica was promoted";
  // Checks succeed again: wait until a full round of every key is error-free.
  std::chrono::steady_clock::duration recovered_after{};
  ASSERT_TRUE(testing::wait_until([&] {
    for (const std::string& key : keys) {
      if (!store->check(key, daily, 0)) return false;
    }
    recovered_after = std::chrono::steady_clock::now() - killed_at;
    return true;
  }));
  // The load goes on until every key has had its fill (a slow sanitizer build takes longer).
  testing::wait_until(
      [&] {
        const std::vector<int> admitted = load.admitted();
        const std::vector<int> failed = load.failed();
        bool filled = true;
        for (std::size_t k = 0; k < keys.size(); ++k) {
          filled = filled && admitted[k] + failed[k] >= daily_limit;
        }
        return filled;
      },
      60s);
  EXPECT_TRUE(load.wait_for_checks(300)) << "the load stopped once the keys were full";
  load.stop();
  const auto longest = std::chrono::duration_cast<std::chrono::milliseconds>(load.longest());
  EXPECT_LE(longest.count(), 2 * 1000 + 500) << "a check waited past its timeout";
  int over = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    EXPECT_GE(load.admitted()[k] + load.failed()[k], daily_limit)
        << keys[k] << ": charged more than once (admitted " << load.admitted()[k] << ", failed "
        << load.failed()[k] << ")";
    over += std::max(0, load.admitted()[k] - daily_limit);
  }
  std::printf(
      "kill -9 of a primary: %zu errors during the failover, all checks ok again %lld ms "
      "after the kill, longest check %lld ms, over-admitted %d (lost writes)\n",
      load.errors().size(),
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(recovered_after).count()),
      static_cast<long long>(longest.count()), over);
}

// A script that ran but whose answer was lost (the connection died before the reply, as when a
// node is killed mid-call) is never sent again when it writes: the call fails, and the key was
// charged once. A dry run, which writes nothing, is sent again.
// One node that owns every slot announces a fault proxy's port, so all traffic crosses it.
TEST(ClusterFaults, AScriptWhoseAnswerIsLostIsSentAgainOnlyIfItWritesNothing) {
  testing::FaultProxy proxy;
  RedisServer node(
      "cluster-enabled yes\ncluster-config-file nodes.conf\n"
      "cluster-announce-ip 127.0.0.1\ncluster-announce-port " +
          std::to_string(proxy.port()) + "\n",
      testing::cluster_port());
  proxy.forward_to(node.port());
  ASSERT_NE(node.cli("CLUSTER ADDSLOTSRANGE 0 16383").find("OK"), std::string::npos);
  ASSERT_TRUE(testing::wait_until(
      [&] { return node.cli("CLUSTER INFO").find("cluster_state:ok") != std::string::npos; }));
  auto store =
      open_on("redis+cluster://127.0.0.1:" + std::to_string(proxy.port()), unique_prefix(), 1000ms);
  ASSERT_NE(store, nullptr);
  const Limit limit = *Limit::make(Algorithm::kGcra, 5, kMicrosPerDay);
  ASSERT_TRUE(store->check("warm", limit, 1));  // the script is loaded, the connection up
  proxy.cut_reply_to_next("EVALSHA");
  Result<Decision> lost = store->check("k", limit, 1);
  EXPECT_EQ(proxy.cuts(), 1);
  EXPECT_FALSE(lost.has_value()) << "the call was sent again after its answer was lost";
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    Result<Decision> d = store->check("k", limit, 1);
    ASSERT_TRUE(d) << d.error().message;
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 4) << "5 per day, and the lost call was charged once";

  // A dry run (the first step of a request across slots) writes nothing: when its answer is
  // lost it is sent again, and the request is decided and charged once.
  const std::string x = key_on(*store, limit, "x", 300);
  const std::string y = key_on(*store, limit, "y", 12000);
  const std::vector<KeyedLimit> layers = {{x, &limit}, {y, &limit}};
  ASSERT_TRUE(store->check_all(layers, 0));  // the all-or-nothing script is loaded
  proxy.cut_reply_to_next("EVALSHA");
  Result<Decisions> both = store->check_all(layers, 1);
  EXPECT_EQ(proxy.cuts(), 2);
  ASSERT_TRUE(both) << "a lost dry run was not sent again: " << both.error().message;
  EXPECT_TRUE(all_allowed(*both));
  for (const std::string& key : {x, y}) {
    Result<Decision> peek = store->check(key, limit, 0);
    ASSERT_TRUE(peek);
    EXPECT_EQ(peek->remaining, 4) << key << " was charged once";
  }
}

TEST(ClusterKeys, EveryKeyOnEveryNodeHasATtl) {
  RedisCluster& cluster = testing::shared_cluster();
  const std::string prefix = "ttl-" + unique_prefix();
  auto store = RedisStore::open({.url = cluster.url(), .key_prefix = prefix});
  ASSERT_TRUE(store);
  // A minute: no key may expire before the audit, however slow the run (a TTL is at most 2P).
  const Micros period = 60 * kMicrosPerSecond;
  int written = 0;
  for (Algorithm a : kAlgorithms) {
    const Limit limit = *Limit::make(a, 20, period);
    for (int i = 0; i < 60; ++i) {
      ASSERT_TRUE((*store)->check("user" + std::to_string(i), limit, 1).has_value());
      ++written;
    }
    // Layered requests across slots too (reserve, and refunds when one layer denies).
    const Limit tight = *Limit::make(a, 1, period);
    for (int i = 0; i < 20; ++i) {
      const std::string one = "l" + std::to_string(i);
      const std::string two = "m" + std::to_string(i);
      const std::vector<KeyedLimit> layers = {{one, &limit}, {two, &tight}};
      ASSERT_TRUE((*store)->check_all(layers, 1).has_value());
      ASSERT_TRUE((*store)->check_all(layers, 1).has_value());
    }
  }
  long long keys = 0;
  for (RedisServer* primary : cluster.primaries()) {
    const testing::KeyAudit audit = testing::audit_keys(*primary, prefix + ":*");
    keys += audit.keys;
    EXPECT_EQ(audit.without_ttl, 0) << "node " << primary->port();
    EXPECT_LE(audit.max_pttl_ms, 2 * period / 1000 + 1) << "node " << primary->port();
  }
  EXPECT_GT(keys, 200) << "the keys went elsewhere: the audit proves nothing";
}

}  // namespace
}  // namespace spillway
