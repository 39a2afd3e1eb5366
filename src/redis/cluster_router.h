// Script calls on a Redis Cluster: each call goes to the primary that owns its keys' slot, over
// a pool of pipelined connections per primary (one Client per node). Replicas are never asked:
// a replica can be behind its primary, and deciding from it would over-admit.
//
// Routine cluster events never reach the caller while the call's time (until its deadline) lasts:
//   MOVED       the slot map is refreshed (CLUSTER SLOTS; one refresh at a time, at most one per
//               kRefreshInterval) and the call is sent to the node the reply names;
//   ASK         the call is sent once to the node the reply names, preceded by ASKING on the same
//               connection (a slot being migrated);
//   TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY, a node that is down or unreachable (the
//               call was never written): the map is refreshed and the call is tried again after
//               a short pause;
//   NOSCRIPT    the call is sent again as EVAL with the script's text, to the same node.
// Only when the time is spent (or kMaxSends sends) does the caller get kTimeout with the last
// error. A call whose connection died after it was written may have run, so it is never sent
// again (the caller gets that error), unless it writes nothing (Script::writes false: a dry run).
// Which replies allow a resend, the pause and the budget are resend.h's, shared with the others.
//
// Thread safety: run() and ready() from any thread. Callbacks run on the nodes' I/O threads or on
// the router's own timer thread. Destruction fails the calls in flight and those waiting to be
// retried, each exactly once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/redis/cluster_map.h"
#include "src/redis/script_target.h"

namespace spillway::redis {

class ClusterRouter final : public ScriptTarget {
 public:
  static constexpr std::chrono::milliseconds kRefreshInterval{100};

  // Learns the slot map from the first seed that answers CLUSTER SLOTS, within options.timeout
  // per seed. Errors name the seeds and why each failed (unreachable, not in cluster mode, …).
  // `node_options` is the template of every node's client (credentials, pool, timeouts); its
  // host and port are replaced by each node's.
  static Result<std::unique_ptr<ClusterRouter>> open(std::vector<NodeAddress> seeds,
                                                     ClientOptions node_options);
  ~ClusterRouter() override;

  void run(std::uint16_t slot, const Script& script, std::shared_ptr<std::vector<std::string>> args,
           Deadline deadline, Callback done) override;
  // Every slot has an owner and every owner has a connection up.
  bool ready() const override;
  bool one_node() const override { return false; }

  // What the router went through (for tests and metrics).
  struct Counters {
    std::uint64_t moved = 0;
    std::uint64_t ask = 0;
    std::uint64_t retried = 0;    // TRYAGAIN, CLUSTERDOWN, a node down: tried again later
    std::uint64_t refreshes = 0;  // slot maps learned
  };
  Counters counters() const;

 private:
  class Impl;
  explicit ClusterRouter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway::redis
