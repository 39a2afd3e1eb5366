// Starts a real Redis Cluster for a test: `primaries` primaries, with `replicas_each` replicas
// each, on free loopback ports below 55536 (the cluster bus listens on port + 10000), created with
// `redis-cli --cluster create`, and waits until every node says cluster_state:ok (and every
// replica has its primary's stream up). Stops them all when destroyed. If the cluster cannot
// start, construction throws: the test fails, nothing is skipped.
// Replicas only for the tests that fail a primary over: a replica costs a start and a sync, and
// slots, redirections and scripts are the primaries' alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/redis_server.h"

namespace spillway::testing {

class RedisCluster {
 public:
  explicit RedisCluster(int primaries = 3, const std::string& extra_config = "",
                        int replicas_each = 0);
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // "redis+cluster://127.0.0.1:P1,127.0.0.1:P2" (two seeds).
  std::string url() const;

  std::vector<RedisServer*> nodes() const;
  // The nodes that are primaries now (asks each node's ROLE).
  std::vector<RedisServer*> primaries() const;
  std::vector<RedisServer*> replicas() const;
  // The primary that owns `slot` now, by CLUSTER SLOTS of a live node.
  RedisServer* owner_of(std::uint16_t slot) const;
  // The node's id (CLUSTER MYID).
  std::string id_of(const RedisServer& node) const;

  // Waits (up to `seconds`) until every running node reports cluster_state:ok and agrees on
  // the owner of every slot; false if it did not happen.
  bool wait_ok(int seconds = 20) const;

  // Moves `slot` from its owner to `to`, with its keys: SETSLOT IMPORTING/MIGRATING, MIGRATE in
  // batches, SETSLOT NODE on every primary. Between migrate_pause_ms pauses, so that clients
  // meet the slot half moved (ASK) and then moved (MOVED). Returns the keys migrated.
  int move_slot(std::uint16_t slot, RedisServer& to, int migrate_pause_ms = 0);

  // `redis-cli -c` style: a command on every running node; returns each node's output.
  std::vector<std::string> on_every_node(const std::string& args) const;

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// One cluster for the whole test process (each ctest test is its own process), three primaries
// and no replica, started on first use and never stopped early: tests that kill or move nodes
// start their own.
RedisCluster& shared_cluster();

// A free loopback port whose cluster bus port (+10000) is free too, for a cluster node a test
// starts by hand. Throws std::runtime_error if none is found.
std::uint16_t cluster_port();

}  // namespace spillway::testing
