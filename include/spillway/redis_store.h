// The Redis backend: every check is one atomic Lua script on the Redis server, called by SHA
// (EVALSHA) and reloaded transparently on NOSCRIPT (restart, failover, SCRIPT FLUSH). Many
// processes sharing one Redis therefore never admit more than the limit.
//
// Time: by default the script reads the server's TIME, so app servers' clock skew does not
// matter; a `now` passed to check() is used instead (replay, tests).
// Keys: "<prefix>:<algorithm>:<L>:<P>:<B>:{<user key>}" — the numbers are fixed-format and the
// user's bytes come last, so no two (limit, key) pairs share a Redis key; the user key is the hash
// tag. Every write sets a TTL that ends when the key is idle again (ms, rounded up).
//
// Thread safety: check() may be called from any number of threads; they share the connections
// (automatic pipelining). Faults come back as Errc::kUnavailable / kTimeout within the timeout.
#pragma once

#include <chrono>
#include <memory>
#include <string>

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
};

class RedisStore final : public Store {
 public:
  // Connects in the background: a Redis that is down now is not an error here (checks fail until
  // it is up). Errors: a malformed URL or options.
  static Result<std::unique_ptr<RedisStore>> open(RedisStoreOptions options);
  ~RedisStore() override;

  Result<Decision> check(std::string_view key, const Limit& limit, std::int64_t cost = 1,
                         std::optional<Micros> now = std::nullopt) override;

  // The Redis key that holds `key`'s state under `limit`.
  std::string storage_key(std::string_view key, const Limit& limit) const;

  bool connected() const;

 private:
  RedisStore(RedisStoreOptions options, std::unique_ptr<redis::Client> client);

  RedisStoreOptions options_;
  std::unique_ptr<redis::Client> client_;
};

}  // namespace spillway
