// The Redis backend: every check is one atomic Lua script on the Redis server, called by SHA
// (EVALSHA). On NOSCRIPT (restart, failover, SCRIPT FLUSH) the call is sent again once as EVAL
// with the script's text, which runs it and caches it again in one atomic step; the caller never
// sees NOSCRIPT. Many processes sharing one Redis therefore never admit more than the limit.
//
// Time: by default the script reads the server's TIME, so app servers' clock skew does not
// matter; a `now` passed to check() is used instead (replay, tests).
// Keys: by default "<prefix>:{<digest>}", the digest (SHA-256 or HMAC-SHA-256, 128 bits, 22
// base64url characters) of the limit and the user key, so callers' API keys and addresses never
// reach Redis in clear; with KeyHash::kNone "<prefix>:<algorithm>:<L>:<P>:<B>:{<user key>}"
// (spillway/key_hash.h, src/redis/storage_key.h). Either way no two (limit, key) pairs share a
// Redis key. Every write sets a TTL that ends when the key is idle again (ms, rounded up).
//
// Batching: checks that arrive while earlier script calls are in flight wait and then go to Redis
// together, up to max_batch checks in one EVALSHA (each still decided exactly, in order, inside
// one atomic script). Under load this lifts throughput past one script call per check; alone, a
// check is sent at once.
//
// Redis Cluster (redis+cluster://seed,seed…): each script goes to the primary that owns its
// keys' hash slot (never to a replica, which may lag and over-admit); MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN, failovers and NOSCRIPT are handled within the timeout (src/redis/cluster_router.h).
// A batch holds checks of one slot. check_all over keys of several slots reserves on each slot
// and refunds when any denies (src/redis/cross_slot.h): it never over-admits; a concurrent
// request may see a reservation for one round trip.
//
// Redis Sentinel (redis+sentinel://sentinel,sentinel…/MASTER_NAME): checks go to the primary the
// sentinels name, verified with ROLE, followed across failovers (src/redis/sentinel.h).
//
// TLS (rediss://, rediss+cluster://): verified against a CA file or the system's store, with the
// host name checked; optional client certificate (src/redis/tls.h).
//
// Deadline: a check's timeout counts from the call, time queued behind other calls included.
//
// Thread safety: decide() (and so every check form) from any number of threads; the checks share
// the connections (automatic pipelining). Faults come back as Errc::kUnavailable / kTimeout within
// the timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/key_hash.h"
#include "spillway/store.h"
#include "spillway/tls_options.h"

namespace spillway {

// TLS to Redis (rediss://, rediss+cluster://): spillway/tls_options.h, under its former name.
using RedisTlsOptions = TlsOptions;

struct RedisStoreOptions {
  // redis://[user:password@]host:port[/db], rediss://… (TLS), unix:///path, or
  // redis[s]+cluster://[user:password@]host:port[,host:port…] (seed nodes of a Redis Cluster)
  std::string url = "redis://127.0.0.1:6379";
  std::string key_prefix = "spillway";
  std::chrono::milliseconds timeout{1000};  // per check
  // Per connection attempt (TCP, TLS handshake, AUTH); also how long `spillway serve` waits for
  // the first connection before it accepts requests.
  std::chrono::milliseconds connect_timeout{1000};
  int pool_size = 2;  // connections
  // Minimum TTL of a written key. 0 in production; replay sets it because its `now` is not the
  // server's clock, and a key must not expire by the wall clock in the middle of a trace.
  std::chrono::milliseconds ttl_floor{0};
  int max_batch = 128;  // checks in one script call; 1 disables batching
  // Script calls in flight per algorithm (and slot) before checks batch; a full batch goes
  // anyway. 2 measured best at 8 and 50 checks in flight, and as good at 400 (docs/benchmarks.md).
  int max_in_flight = 2;
  // Cluster, check_all over several slots: a dry call per slot before reserving, so that a
  // request that some layer denies charges nothing and needs no refund (docs/benchmarks.md).
  bool cluster_dry_run_first = true;
  // TLS settings for a rediss:// URL (an error with a plain URL, so that a forgotten 's' does not
  // silently send data in clear).
  std::optional<TlsOptions> tls;
  // How key names carry the user keys: digested (the default) or in clear (spillway/key_hash.h).
  KeyHashOptions key_hash;
  // Replicas that must hold every write of a script call (a check, reservation, settlement,
  // lease, reset, the readiness probe; tenant records and Envoy quota shares opened with these
  // options too) before its answer is returned (0 to 16; backend.durability: replicated is 1):
  // the script and then `WAIT replica_acks <ms>` (the call's time left, less a tenth and at
  // least 5 ms), back to back on one connection. Fewer acknowledgements in time fail the call
  // (Errc::kUnavailable; the write stays on the primary, so on_error deny under-admits, never
  // over-). With 0 (the default) an unclean failover loses the writes the replica had not
  // received yet, and admits that many again (docs/reliability.md). With one replica per primary
  // (Sentinel and Cluster promote the most advanced), 1 loses no admission. Dry runs write
  // nothing and do not wait.
  int replica_acks = 0;
};

class RedisStore final : public Store {
 public:
  // One Redis: connects in the background; a Redis that is down now is not an error here (checks
  // fail until it is up). A cluster: learns the slot map from the seeds first; no seed that
  // answers as a cluster node is an error naming each seed's problem. Errors: a malformed URL or
  // options (kInvalidArgument).
  static Result<std::unique_ptr<RedisStore>> open(RedisStoreOptions options);
  // What open() checks before it connects: the options, the URL parsed fully, the TLS files
  // loaded. Connects to nothing. An error's `field` is "url", "tls" (the settings to blame;
  // "tls" when TLS settings or files are wrong) or "key_secret" (key_hash), empty for the other
  // options.
  static Result<void> check_options(const RedisStoreOptions& options);
  ~RedisStore() override;

  // One key: batched with other single-key checks of its algorithm (lua/<algorithm>.lua). Several:
  // one script call (lua/all_or_nothing.lua) over all the keys; on a cluster, one per hash slot
  // with reserve-then-refund (see above).
  void decide(const StoreRequest& request, AllCallback done) override;

  // Usage-based limits (docs/SPEC.md §5.3): a kReserve request is charged as a check is, and its
  // record (each key's estimate and charge mark, its layers) is written in the same atomic step,
  // with the reservation's ttl (Redis' own clock: a `now` does not move it). settle() consumes
  // the record and settles its keys in one script (lua/settle.lua), so a reservation is settled
  // once across every instance sharing the Redis. On a cluster, a reservation over several slots
  // keeps one record per slot next to its keys and a home record found from the id; a settlement
  // is then two round trips (the home record, then the other slots), and a failure in the second
  // (a timeout) leaves those slots' estimates charged. src/redis/store_reservations.cc.
  void settle(const Settlement& settlement, SettleCallback done) override;

  // The Redis key that holds `key`'s state under `limit`.
  std::string storage_key(std::string_view key, const Limit& limit) const;

  // Whether a connection to Redis is up (a cluster: every slot has an owner with a connection)
  // and the last probe(), if any, succeeded.
  bool ready() const override;
  // lua/probe.lua on "<key_prefix>:readiness-probe" through the same target as every check's
  // script (a write and a delete in one step: nothing is left), within the check timeout: what
  // fails every check fails it (NOAUTH, NOPERM, LOADING, READONLY, MISCONF, OOM, no reply, a
  // cluster's or a sentinel's unreachable primary). Its error adds the cause in plain words
  // (src/redis/error_cause.h).
  Result<void> probe() override;
  // spillway_backend_probes_total: the probe() calls made (each one script call on Redis, which a
  // reader of Redis' own command counts sets apart from the checks' with it).
  void append_metrics(std::string& out) const override;
  // Waits for a connection, then probes every 50 ms until one succeeds, within `timeout` (and
  // one check timeout for the last probe). The error: the last one the server replied (NOAUTH,
  // READONLY …), else the last probe's (no reply in time); a connection that never came up is
  // reported with its last cause ("connect failed: Connection refused", "AUTH failed: WRONGPASS
  // …").
  Result<void> wait_ready(std::chrono::milliseconds timeout) override;

  // How a cluster's routine events were handled so far (zeros on one Redis); for tests, metrics.
  struct RoutingCounters {
    std::uint64_t moved = 0;
    std::uint64_t ask = 0;
    std::uint64_t retried = 0;
    std::uint64_t refreshes = 0;
  };
  RoutingCounters routing_counters() const;

 private:
  // The options, key digest, the connection target (one node, a cluster's router, or the
  // sentinels' primary), one batcher per algorithm and the probe counters, and the private steps
  // of deciding, reserving, charging and resetting: src/redis/redis_store_impl.h.
  class Impl;
  explicit RedisStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
