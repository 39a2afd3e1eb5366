// The Redis backend: every check is one atomic Lua script on the Redis server, called by SHA
// (EVALSHA). On NOSCRIPT (restart, failover, SCRIPT FLUSH) the call is sent again once as EVAL
// with the script's text, which runs it and caches it again in one atomic step; the caller never
// sees NOSCRIPT. Many processes sharing one Redis therefore never admit more than the limit.
//
// Time: by default the script reads the server's TIME, so app servers' clock skew does not
// matter; a `now` passed to check() is used instead (replay, tests).
// Keys: "<prefix>:<algorithm>:<L>:<P>:<B>:{<user key>}" — the numbers are fixed-format and the
// user's bytes come last, so no two (limit, key) pairs share a Redis key; the user key is the hash
// tag. Every write sets a TTL that ends when the key is idle again (ms, rounded up).
//
// Batching: checks that arrive while earlier script calls are in flight wait and then go to Redis
// together, up to max_batch checks in one EVALSHA (each still decided exactly, in order, inside
// one atomic script). Under load this lifts throughput past one script call per check; alone, a
// check is sent at once.
//
// Thread safety: check() and check_async() may be called from any number of threads; they share
// the connections (automatic pipelining). Faults come back as Errc::kUnavailable / kTimeout within
// the timeout.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "spillway/store.h"

namespace spillway {

namespace redis {
class Client;
}

struct RedisStoreOptions {
  std::string url = "redis://127.0.0.1:6379";  // redis://[user:password@]host:port[/db], unix://
  std::string key_prefix = "spillway";
  std::chrono::milliseconds timeout{1000};  // per check
  int pool_size = 2;                        // connections
  // Minimum TTL of a written key. 0 in production; replay sets it because its `now` is not the
  // server's clock, and a key must not expire by the wall clock in the middle of a trace.
  std::chrono::milliseconds ttl_floor{0};
  int max_batch = 128;    // checks in one script call; 1 disables batching
  int max_in_flight = 8;  // script calls in flight per algorithm before checks wait and batch
};

class RedisStore final : public Store {
 public:
  // Connects in the background: a Redis that is down now is not an error here (checks fail until
  // it is up). Errors: a malformed URL or options.
  static Result<std::unique_ptr<RedisStore>> open(RedisStoreOptions options);
  ~RedisStore() override;

  Result<Decision> check(std::string_view key, const Limit& limit, std::int64_t cost = 1,
                         std::optional<Micros> now = std::nullopt) override;
  void check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                   std::optional<Micros> now, Callback done) override;
  // One script call (lua/all_or_nothing.lua) over all the keys: they must live on one Redis node.
  Result<Decisions> check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                              std::optional<Micros> now = std::nullopt) override;
  void check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                       std::optional<Micros> now, AllCallback done) override;

  // The Redis key that holds `key`'s state under `limit`.
  std::string storage_key(std::string_view key, const Limit& limit) const;

  // Whether a connection to Redis is up.
  bool ready() const override;

 private:
  class Batcher;
  RedisStore(RedisStoreOptions options, std::unique_ptr<redis::Client> client);

  RedisStoreOptions options_;
  std::unique_ptr<redis::Client> client_;
  std::vector<std::unique_ptr<Batcher>> batchers_;  // one per algorithm
};

}  // namespace spillway
