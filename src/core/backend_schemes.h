// The backend URL schemes spillway knows, in one table: which backend each names and whether it
// speaks TLS. open_store() picks the backend by it; the config's checks, the Redis URL parsers,
// `serve` and /v1/stats ask it instead of spelling schemes themselves. A new scheme is one line
// here (and its parser).
//
// Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <string_view>

namespace spillway {

enum class BackendKind {
  kMemory,         // the in-process store (MemoryStore)
  kRedis,          // one Redis over TCP
  kRedisUnix,      // one Redis over a unix socket
  kRedisCluster,   // a Redis Cluster, from seed nodes
  kRedisSentinel,  // the primary that Redis Sentinels name
};

struct BackendScheme {
  std::string_view name;    // "redis+cluster": the backend's kind in /v1/stats
  std::string_view prefix;  // "redis+cluster://": how a URL of this scheme starts
  BackendKind kind;
  bool tls;  // the connections use TLS (backend.tls applies)
};

inline constexpr std::array<BackendScheme, 7> kBackendSchemes = {{
    {"memory", "memory://", BackendKind::kMemory, false},
    {"redis", "redis://", BackendKind::kRedis, false},
    {"rediss", "rediss://", BackendKind::kRedis, true},
    {"unix", "unix://", BackendKind::kRedisUnix, false},
    {"redis+cluster", "redis+cluster://", BackendKind::kRedisCluster, false},
    {"rediss+cluster", "rediss+cluster://", BackendKind::kRedisCluster, true},
    {"redis+sentinel", "redis+sentinel://", BackendKind::kRedisSentinel, false},
}};

// The scheme `url` is written in, nullptr for none. The memory store's URL is "memory" or
// "memory://" and nothing after it; the others' are their prefix and what follows (checked by
// their parsers, not here).
const BackendScheme* find_backend_scheme(std::string_view url);

// Whether `url` names a Redis backend (any kind); see find_backend_scheme.
bool is_redis_backend_url(std::string_view url);

}  // namespace spillway
