// Where RedisStore's script calls go: one Redis server (SingleNode, here), a Redis Cluster
// (ClusterRouter, src/redis/cluster_router.h) or the primary Redis Sentinel names
// (SentinelTarget, src/redis/sentinel.h). All three call scripts by SHA (EVALSHA) and, on
// NOSCRIPT, send the call once more as EVAL with the text, which runs and caches it in one atomic
// step, so the caller never sees NOSCRIPT. When else a call is sent again is src/redis/resend.h's
// rule, the same for the three.
//
// Thread safety: run() may be called from any thread; `done` runs exactly once, on an I/O
// thread of the target, and must not block. Destroying a target fails the calls in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/redis/client.h"
#include "src/redis/reply.h"

namespace spillway {
struct RedisStoreOptions;  // spillway/redis_store.h
}  // namespace spillway

namespace spillway::redis {

// A script's text and its SHA-1 (both outlive every call: they are compiled in), and whether
// this call of it may write. A call that writes nothing (a dry run) may be sent again after its
// connection died with the call written; one that writes may have run, so it is not.
struct Script {
  std::string_view source;
  const std::string* sha;
  bool writes = true;
};

// Fills args[0] and args[1] of a script call: EVALSHA and the SHA, or (after NOSCRIPT) EVAL and
// the text.
inline void set_script_call(std::vector<std::string>& args, const Script& script,
                            bool with_source) {
  args[0] = with_source ? "EVAL" : "EVALSHA";
  args[1] = with_source ? std::string(script.source) : *script.sha;
}

class ScriptTarget {
 public:
  using Callback = std::function<void(Result<Reply>)>;
  using Deadline = SocketClock::time_point;
  virtual ~ScriptTarget() = default;

  // Runs `script`. args = {"", "", numkeys, keys…, argv…}: the first two are filled in here
  // (EVALSHA/EVAL, SHA/text). Every key of the call hashes to `slot` (key_slot). `done` gets
  // kTimeout when no answer came by `deadline` (retries and redirections included).
  virtual void run(std::uint16_t slot, const Script& script,
                   std::shared_ptr<std::vector<std::string>> args, Deadline deadline,
                   Callback done) = 0;

  // Whether the target can serve calls now (for readiness).
  virtual bool ready() const = 0;

  // True when one call may hold keys of different slots (one server); false on a cluster.
  virtual bool one_node() const = 0;
};

// One Redis server through one Client (a pool of pipelined connections).
class SingleNode final : public ScriptTarget {
 public:
  explicit SingleNode(ClientOptions options) : client_(std::move(options)) {}

  void run(std::uint16_t slot, const Script& script, std::shared_ptr<std::vector<std::string>> args,
           Deadline deadline, Callback done) override;
  bool ready() const override { return client_.connected(); }
  bool one_node() const override { return true; }

 private:
  Client client_;
};

// The target the options' URL names (one node, a cluster, or the primary Sentinel names), with
// their TLS, pool size and timeouts (src/redis/redis_store.cc). Connects in the background; a
// cluster learns its slot map from the seeds first. Errors as RedisStore::open's; the options
// are expected to have passed RedisStore::check_options.
Result<std::unique_ptr<ScriptTarget>> open_script_target(RedisStoreOptions options);

}  // namespace spillway::redis
