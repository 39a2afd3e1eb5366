// Opens a backend by URL, above all backends: the one place that builds them, and puts around a
// Redis backend the wrappers its options ask for (in the order of one list,
// src/open_store/wrapper_stack.cc). Which URL schemes exist is one table
// (src/core/backend_schemes.h, also read by the config's checks and `serve`). Code that takes a
// Store (the policy, the server) does not depend on any backend; a program that lets its user
// pick the backend (the spillway command) calls open_store.
//
// URLs:
//   memory (or memory://)                         the in-process store (MemoryStore)
//   redis://[user:password@]host:port[/db]        one Redis (RedisStore)
//   unix:///path                                  one Redis on a unix socket
//   rediss://…?tls_ca_file=…                      the same over TLS
//   redis+cluster://[user:password@]host:port[,host:port…]   a Redis Cluster (RedisStore)
//   rediss+cluster://…                            the same over TLS
//   redis+sentinel://[user:password@]host:port[,host:port…]/MASTER_NAME[/db]
//                                                 the primary that Redis Sentinel names
// Anything else is Errc::kInvalidArgument, naming the URL.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "spillway/circuit_breaker.h"
#include "spillway/error.h"
#include "spillway/lease_store.h"
#include "spillway/local_fallback.h"
#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"
#include "spillway/redis_store.h"
#include "spillway/store.h"
#include "spillway/tenant_directory.h"

namespace spillway {

// Each backend's own options; open_store uses the one its URL names.
struct BackendOptions {
  // For "memory". open_store sweeps idle keys every second by default, a task on the runtime
  // (MemoryStore's own default is no sweep task); set 0 when every check passes its own `now` on a
  // clock other than `memory.clock` (replay).
  MemoryStoreOptions memory{.sweep_interval = std::chrono::seconds(1)};
  // For every Redis URL (redis://, rediss://, unix://, redis[s]+cluster://, redis+sentinel://).
  // Its `url` is replaced by the URL given to open_store.
  RedisStoreOptions redis;
  // A Redis backend is wrapped in a CircuitBreakerStore with these options (failures 0: not).
  CircuitBreakerOptions breaker;
  // on_error: local. A Redis backend is wrapped (outside the breaker) in a LocalFallbackStore
  // whose local store is a MemoryStore with `memory`'s options.
  bool local_fallback = false;
  // A Redis backend's denials are remembered in an OverLimitCache of this many keys (inside the
  // local fallback, outside the breaker), on `memory.clock`; 0: no cache.
  std::size_t over_limit_cache = 0;
  // A Redis backend is wrapped, outermost, in a LeaseStore with these options, so that keys
  // checked with a LeaseSpec (a layer's `sync: lease`) are decided from quota leases; nullopt:
  // not (every key decided exactly). The memory backend is never wrapped: it decides every key
  // in the process already, exactly.
  std::optional<LeaseStoreOptions> leases;
};

Result<std::unique_ptr<Store>> open_store(std::string_view url, BackendOptions options = {});

// Everything open_store checks short of connecting: the URL parsed fully, a Redis backend's
// options and TLS files (RedisStore::check_options; the error's `field` is "url" or "tls").
// Opens nothing; for `spillway validate` and serve's checks before it starts.
Result<void> check_store(std::string_view url, const BackendOptions& options);

// Where the tenant records of a backend live (spillway/tenant_directory.h).
struct TenantOptions {
  // memory: the journal file (empty: in this process only, lost at exit). Redis: must be empty.
  std::string file;
  // Redis: the follower's lines (lost or regained Redis, a full reload). Default: nothing.
  std::function<void(const std::string&)> log;
};

// The tenant directory of the backend `url` names: an fsync'd file for memory, Redis for every
// Redis URL (records under the same key_prefix and key_hash as options.redis's). The Redis one
// connects in the background (ready() once loaded). Errors: a bad URL or options, an unreadable
// or foreign tenants file (kInvalidArgument, naming it).
Result<std::unique_ptr<TenantDirectory>> open_tenants(std::string_view url,
                                                      const BackendOptions& options,
                                                      TenantOptions tenants = {});

// Whether `url` names a Redis backend (one of the redis schemes above).
bool is_redis_url(std::string_view url);

}  // namespace spillway
