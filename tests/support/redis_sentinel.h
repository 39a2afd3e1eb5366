// A Redis Sentinel deployment on loopback for failover tests: one primary and one replica
// (RedisServer, plain TCP), and three redis-sentinel processes (the Debian package
// redis-sentinel) on free ports monitoring them with quorum 2. Construction waits until the
// deployment is settled (see wait_settled()) and throws std::runtime_error with the logs when it
// does not get there; the destructor kills everything with SIGKILL and removes the temporary
// directories.
//
// The sentinels run with shorter INFO, hello and PING periods than Redis's defaults (SENTINEL
// DEBUG info-period 1000 publish-period 500 ping-period 250; see redis_sentinel.cc): a demoted
// primary becomes a replica ~3 s after a failover instead of ~20 s. down-after-milliseconds and
// the failover itself are Redis's own.
//
// Units: milliseconds. Measured with the defaults (down-after 1000, failover-timeout 4000) on a
// 2-core machine: construction ~0.8 s; kill_primary() until wait_for_new_primary() returns
// 1.9-2.4 s; failover() until then 0.3-1.1 s; wait_settled() after either ~3 s. With one
// sentinel stopped the two others can split their votes: then a kill takes ~9.5 s (they retry
// after 2 x failover-timeout), so give wait_for_new_primary() 15 s or more.
//
// Thread safety: none; use the object from one thread at a time. The processes get SIGKILL when
// the thread that started them exits (PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/redis_server.h"

namespace spillway::testing {

class SentinelGroup {
 public:
  // One primary and one replica ("replicaof 127.0.0.1 <primary port>"; both with
  // "repl-diskless-sync no"), three sentinels monitoring them as `master_name` with quorum
  // 2, "down-after-milliseconds" `down_after_ms`, "failover-timeout" `failover_timeout_ms` and
  // "parallel-syncs 1".
  explicit SentinelGroup(std::string master_name = "spillway", int down_after_ms = 1000,
                         int failover_timeout_ms = 4000);
  ~SentinelGroup();
  SentinelGroup(const SentinelGroup&) = delete;
  SentinelGroup& operator=(const SentinelGroup&) = delete;

  // "redis+sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/<master_name>".
  std::string url() const;
  const std::string& master_name() const { return master_name_; }
  std::vector<std::uint16_t> sentinel_ports() const;

  // The primary's port as sentinel #0 reports it now (SENTINEL get-master-addr-by-name; the
  // first running sentinel if #0 is stopped); 0 if it answers nothing.
  std::uint16_t primary_port() const;
  std::uint16_t initial_primary_port() const;
  std::uint16_t initial_replica_port() const;
  // The RedisServer (primary or replica) on that port; throws std::runtime_error for another.
  RedisServer& server_on(std::uint16_t port);

  // SIGKILL to the server that is primary now (by primary_port()). server_on(port).start()
  // brings it back later, empty, with its original config (the initial primary: as a master
  // for ~2-3 s); the sentinels then make it a replica of the new primary.
  void kill_primary();
  // SENTINEL FAILOVER <name> on sentinel #0 (a coordinated switch, both servers up); returns
  // when the sentinel accepted it, not when it is done (see wait_for_new_primary()). Throws
  // std::runtime_error with the sentinel's answer if it refuses (e.g. -NOGOODSLAVE). Redis 7.0
  // does not wait for the replica to catch up: a test that needs a write to survive sends
  // `WAIT 1 1000` to the primary first.
  void failover();

  // Polls until every running sentinel reports the same primary, on a port other than
  // `old_port`, and that server answers ROLE with "master"; false after `timeout`.
  bool wait_for_new_primary(std::uint16_t old_port, std::chrono::milliseconds timeout);
  // Polls until the deployment is ready for (another) failover: every running sentinel reports
  // the same primary, which answers ROLE "master"; every other running server is its replica
  // with master_link_status:up; every running sentinel lists those replicas with flags "slave"
  // and master-link-status "ok", knows the two other sentinels, and SENTINEL CKQUORUM says OK.
  // False after `timeout`. The constructor waits for this (30 s).
  bool wait_settled(std::chrono::milliseconds timeout);

  // `redis-cli -h 127.0.0.1 -p <port of sentinel #index> args` (shell words); its stdout.
  std::string sentinel_cli(int index, const std::string& args) const;
  // SIGKILL to sentinel #index / start it again with the config it rewrote (its id, epoch and
  // the deployment it learnt): for tests of a client that must skip a dead sentinel.
  void stop_sentinel(int index);
  void start_sentinel(int index);

  // Why the last wait_settled() was not settled yet, every sentinel's log, and every server's
  // ROLE and log: for failure messages.
  std::string logs() const;

 private:
  class Sentinel;  // one redis-sentinel process and its directory (in the .cc file)

  // Why the deployment is not settled (see wait_settled()); empty when it is.
  std::string unsettled();

  std::string master_name_;
  // Declared before sentinels_: destroyed after them (the sentinels die first).
  std::unique_ptr<RedisServer> primary_;
  std::unique_ptr<RedisServer> replica_;
  std::vector<std::unique_ptr<Sentinel>> sentinels_;
  std::string last_unsettled_;  // by the last wait_settled(), for logs()
};

}  // namespace spillway::testing
