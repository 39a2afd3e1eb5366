// No admission lost to an unclean failover (docs/reliability.md): Redis replicates
// asynchronously, so the writes a primary had not yet sent to its replica are lost when it dies,
// and the keys they touched admit that many again after the replica is promoted. These tests
// make the loss certain and measure it: the replica is cut off (paused with SIGSTOP and its
// replication link closed by the primary, as a partition between the two or a stalled replica
// would leave it) while every key takes its burst; then the primary is killed (kill -9) and the
// replica resumed and promoted; the keys then take their burst again. (A pause alone loses
// nothing on loopback: what the primary sent waits in the paused replica's socket buffer.)
//
//  - backend.durability async (the default): the checker sees the lost burst admitted twice;
//  - backend.durability replicated: no answer admits before a replica holds its charge. While
//    the replica is paused nothing is acknowledged, so those requests fail (on_error deny); after
//    the failover the new primary has no replica until the old one returns as one (the test
//    starts it again), and then decisions resume. The checker sees no over-admission.
//
// Through Sentinel (FaultsSentinel.*) and on a Redis Cluster (FaultsCluster.*).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "tests/support/fault_fleet.h"
#include "tests/support/history.h"
#include "tests/support/poll.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_sentinel.h"

namespace spillway::testing {
namespace {

using namespace std::chrono_literals;

constexpr AdmissionBound kFailoverBound{.burst = 20, .limit = 20, .period = 60s};
constexpr int kFailoverKeys = 4;

std::int64_t admitted_since(const FaultFleet& fleet, HistoryClock::time_point since) {
  std::int64_t admitted = 0;
  for (const Operation& op : fleet.history().operations()) {
    admitted += op.invoked >= since && op.answer == Answer::kAdmitted;
  }
  return admitted;
}

// The unclean failover of one backend, as these tests drive it.
struct UncleanFailover {
  std::function<void()> pause_replicas;
  // Kills the primary (kill -9), resumes the replicas, and returns once a replica was promoted
  // (false if none was in 30 s).
  std::function<bool()> kill_primary_and_promote;
  // Starts the killed primary again (it comes back as a replica).
  std::function<void()> restart_old_primary;
};

// Traffic with the replicas paused until every key took its burst (durability async) or for
// 1.5 s (replicated: nothing is acknowledged, so nothing is admitted); then the failover; then
// traffic until every instance decides again, and 1.5 s more.
HistoryReport run_unclean_failover(FaultFleet& fleet, const UncleanFailover& failover,
                                   bool replicated) {
  const std::int64_t all_bursts = kFailoverBound.burst * kFailoverKeys;
  failover.pause_replicas();
  fleet.start_clients();
  const HistoryClock::time_point started = HistoryClock::now();
  if (replicated) {
    std::this_thread::sleep_for(soak_scaled(1500ms));
  } else {
    EXPECT_TRUE(wait_until([&] { return admitted_since(fleet, started) >= all_bursts; }, 30s))
        << "the keys did not take their burst before the failover:\n"
        << fleet.logs();
  }
  const HistoryClock::time_point faulted = HistoryClock::now();
  EXPECT_TRUE(failover.kill_primary_and_promote()) << "no replica was promoted";
  if (replicated) failover.restart_old_primary();
  const HistoryClock::time_point healed = HistoryClock::now();
  // Traffic until every instance decides again (30 s at most: a deadline for a hang), and 1.5 s
  // more, in which a key whose charges were lost takes its burst again (in ~0.2 s here).
  wait_until([&] { return fleet.decided_since(healed); }, 30s);
  std::this_thread::sleep_for(soak_scaled(1500ms));
  fleet.stop_clients();
  return check_history(fleet.history().operations(), kFailoverBound, faulted, healed);
}

// durability async: the loss the README states, measured: each key's burst, lost with the
// primary, is admitted again. (If Redis ever stopped losing it, this would fail, and the caveat
// could go.)
void expect_loss_measured(const HistoryReport& report, const FaultFleet& fleet) {
  EXPECT_GT(report.over_admitted, 0) << "no write was lost";
  EXPECT_TRUE(report.recovered) << fleet.logs();
}

// durability replicated: nothing over the bound, decisions after the failover, and the cut-off
// replica felt as errors (never as fail-open admissions).
void expect_no_admission_lost(const HistoryReport& report, const FaultFleet& fleet) {
  EXPECT_EQ(report.over_admitted, 0) << report.worst;
  EXPECT_GT(report.admitted, 0) << "nothing was admitted after the failover:\n" << fleet.logs();
  EXPECT_GT(report.errors, 0) << "the cut-off replica was not felt";
  EXPECT_EQ(report.fail_open, 0);
  EXPECT_TRUE(report.recovered) << fleet.logs();
}

FleetOptions failover_fleet(const std::string& url, const std::string& name, bool replicated) {
  return {.keys = kFailoverKeys,
          .key_prefix = name + "-" + std::to_string(::getpid()),
          .backend_url = url,
          .backend_lines = replicated ? "  durability: replicated\n" : "",
          .backend_timeout = 1000ms};
}

UncleanFailover sentinel_failover(SentinelGroup& group) {
  const std::uint16_t primary = group.initial_primary_port();
  const std::uint16_t replica = group.initial_replica_port();
  return {.pause_replicas =
              [&group, primary, replica] {
                group.server_on(replica).pause();
                group.server_on(primary).cli("CLIENT KILL TYPE replica");
              },
          .kill_primary_and_promote =
              [&group, primary, replica] {
                group.kill_primary();
                group.server_on(replica).resume();
                return group.wait_for_new_primary(primary, 30s);
              },
          .restart_old_primary = [&group, primary] { group.server_on(primary).start(); }};
}

TEST(FaultsSentinel, WithoutDurabilityAnUncleanFailoverReadmitsWhatWasLost) {
  SentinelGroup group("faults");
  FaultFleet fleet(failover_fleet(group.url(), "sentinel-async", false));
  const HistoryReport report = run_unclean_failover(fleet, sentinel_failover(group), false);
  record_fault_row("unclean failover: replica paused, primary killed", "sentinel",
                   "exact, durability async", report);
  expect_loss_measured(report, fleet);
}

TEST(FaultsSentinel, ReplicatedDurabilityLosesNoAdmissionInAnUncleanFailover) {
  SentinelGroup group("faults");
  FaultFleet fleet(failover_fleet(group.url(), "sentinel-replicated", true));
  const HistoryReport report = run_unclean_failover(fleet, sentinel_failover(group), true);
  record_fault_row("unclean failover: replica paused, primary killed", "sentinel",
                   "exact, durability replicated", report);
  expect_no_admission_lost(report, fleet);
}

// On a cluster: every replica paused, and the primary holding the most of the fleet's keys
// killed (the others keep theirs: their primaries live).
UncleanFailover cluster_failover(RedisCluster& cluster, RedisServer*& victim) {
  // Asked now: a paused node would not answer ROLE.
  const std::vector<RedisServer*> primaries = cluster.primaries();
  const std::vector<RedisServer*> replicas = cluster.replicas();
  return {.pause_replicas =
              [primaries, replicas] {
                for (RedisServer* replica : replicas) replica->pause();
                for (RedisServer* primary : primaries) primary->cli("CLIENT KILL TYPE replica");
              },
          .kill_primary_and_promote =
              [&cluster, &victim, primaries, replicas] {
                int most = -1;
                for (RedisServer* primary : primaries) {
                  const int keys = std::atoi(primary->cli("DBSIZE").c_str());
                  if (keys > most) {
                    most = keys;
                    victim = primary;
                  }
                }
                victim->stop();
                for (RedisServer* replica : replicas) replica->resume();
                return wait_until(
                    [&] { return cluster.primaries().size() == 3 && cluster.wait_ok(1); }, 30s);
              },
          .restart_old_primary = [&victim] { victim->start(); }};
}

TEST(FaultsCluster, WithoutDurabilityAnUncleanFailoverReadmitsWhatWasLost) {
  RedisCluster cluster(3, "", /*replicas_each=*/1);
  FaultFleet fleet(failover_fleet(cluster.url(), "cluster-async", false));
  RedisServer* victim = nullptr;
  const HistoryReport report =
      run_unclean_failover(fleet, cluster_failover(cluster, victim), false);
  record_fault_row("unclean failover: replicas paused, a primary killed", "cluster",
                   "exact, durability async", report);
  expect_loss_measured(report, fleet);
}

TEST(FaultsCluster, ReplicatedDurabilityLosesNoAdmissionInAnUncleanFailover) {
  RedisCluster cluster(3, "", /*replicas_each=*/1);
  FaultFleet fleet(failover_fleet(cluster.url(), "cluster-replicated", true));
  RedisServer* victim = nullptr;
  const HistoryReport report = run_unclean_failover(fleet, cluster_failover(cluster, victim), true);
  record_fault_row("unclean failover: replicas paused, a primary killed", "cluster",
                   "exact, durability replicated", report);
  expect_no_admission_lost(report, fleet);
}

}  // namespace
}  // namespace spillway::testing
