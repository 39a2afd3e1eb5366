// Script calls on the primary that Redis Sentinel names (redis+sentinel://…/MASTER_NAME): the
// sentinels are asked for the primary (SENTINEL get-master-addr-by-name), the answer is verified
// with ROLE on that server (a sentinel may still name a demoted or dead primary), and calls go
// to it through one pipelined Client (a SingleNode). Replicas are never asked.
//
// Following a failover (a watcher thread; it asks the sentinels through the project's Client,
// one per sentinel, waiting for each answer within the sentinel timeout):
//   - it stays subscribed to +switch-master on one sentinel (the next one when that one fails),
//     and asks again at once when the message names our primary;
//   - it asks again when a call finds the primary unreachable or answers READONLY (a demoted
//     primary), and once a second anyway (a message can be lost);
//   - a new, verified primary gets a new client; the old one is closed once no call holds it.
// A call that was not applied (READONLY, or no connection was up when it was sent) is sent again
// after a pause until its deadline (resend.h's rule, as on a cluster), so during a switch it
// waits for the new primary instead of failing at once. A call lost with its connection is not
// sent again (it may have run): it fails with kUnavailable, and on_error answers.
//
// Left out: sentinels that require a password or TLS (the primary's credentials come from the
// URL, which has no place for the sentinels' own; TLS to the primary is not offered with Sentinel
// yet). The sentinels' Clients would take either as they are once the URL carries them.
//
// Thread safety: run() and ready() from any thread. Callbacks run on a client's I/O thread or
// the watcher thread. Destruction stops the watcher and fails what waits, each call once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/redis/cluster_map.h"
#include "src/redis/script_target.h"
#include "src/redis/url.h"

namespace spillway::redis {

class SentinelTarget final : public ScriptTarget {
 public:
  static constexpr std::chrono::milliseconds kRecheckInterval{1000};

  // Asks the sentinels for the primary (each within options.timeout, at least 200 ms) before it
  // returns. Errors name every sentinel and what it answered (unreachable, does not know the
  // name, names a server that is not a primary).
  static Result<std::unique_ptr<SentinelTarget>> open(SentinelUrl url, ClientOptions node_options);
  ~SentinelTarget() override;

  void run(std::uint16_t slot, const Script& script, std::shared_ptr<std::vector<std::string>> args,
           Deadline deadline, Callback done) override;
  bool ready() const override;
  bool one_node() const override { return true; }

  // The primary used now, and how many times it changed since open (for tests and metrics).
  NodeAddress primary() const;
  std::uint64_t switches() const;

 private:
  class Impl;
  explicit SentinelTarget(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway::redis
