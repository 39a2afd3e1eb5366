// The backend URL schemes spillway knows, in one table: which backend each names and whether it
// speaks TLS. open_store() picks the backend by it; the config's checks, the Redis URL parsers,
// `serve` and /v1/stats ask it instead of spelling schemes themselves. A new scheme is one line
// here (and its parser). Also here, for every backend URL: the one list of their forms that help
// texts and errors show, and the one way a URL is printed without its password.
//
// Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <string>
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
  bool tls;               // the connections use TLS (backend.tls applies)
  std::string_view form;  // how a URL of this scheme is written, for help and errors
};

inline constexpr std::array<BackendScheme, 7> kBackendSchemes = {{
    {"memory", "memory://", BackendKind::kMemory, false, "memory"},
    {"redis", "redis://", BackendKind::kRedis, false, "redis://[user:password@]host:port[/db]"},
    {"rediss", "rediss://", BackendKind::kRedis, true,
     "rediss://host:port[/db]?tls_ca_file=…&tls_cert_file=…&tls_key_file=…&tls_server_name=…"},
    {"unix", "unix://", BackendKind::kRedisUnix, false, "unix:///path"},
    {"redis+cluster", "redis+cluster://", BackendKind::kRedisCluster, false,
     "redis+cluster://host:port,host:port…"},
    {"rediss+cluster", "rediss+cluster://", BackendKind::kRedisCluster, true, "rediss+cluster://…"},
    {"redis+sentinel", "redis+sentinel://", BackendKind::kRedisSentinel, false,
     "redis+sentinel://host:port,host:port…/MASTER_NAME[/db]"},
}};

// The scheme `url` is written in, nullptr for none. The memory store's URL is "memory" or
// "memory://" and nothing after it; the others' are their prefix and what follows (checked by
// their parsers, not here).
const BackendScheme* find_backend_scheme(std::string_view url);

// Whether `url` names a Redis backend (any kind); see find_backend_scheme.
bool is_redis_backend_url(std::string_view url);

// Every scheme's form, "memory, redis://[user:password@]host:port[/db], … or
// redis+sentinel://…": what `spillway help` lists and what an unknown URL's error says to use.
std::string backend_url_forms();

// A backend URL as it may be printed (log lines, errors): the password replaced by "***",
// everything else as given. The password is what follows the first ':' of the user info (between
// "://" and the last '@' before the query, as the URL parsers read it); user info without a ':'
// is replaced whole; a "password=" query parameter's value too (unix:///path?password=…). A unix
// socket's path has no user info: an '@' in it stays. Text of no known scheme (a mistyped one):
// its user info runs to the last '@' of all, a '?' included. Never fails: text with nothing of
// that comes back unchanged.
std::string printable_url(std::string_view url);

}  // namespace spillway
