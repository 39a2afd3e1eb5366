// The YAML configuration file (server, backend, rls, layers) and its validation. Errors name the
// line (1-based) and the field, e.g. "line 12: layers[1].limit: rate \"60/mn\" has no valid
// period".
//
// Example:
//   server:
//     listen: 127.0.0.1:8080
//     threads: 2
//     trusted_proxies: [127.0.0.1/32, 10.0.0.0/8]
//     client_ip_header: x-forwarded-for  # or forwarded (RFC 7239), x-real-ip: the one header
//                                        #    the trusted proxies set (the only one read)
//     ipv6_prefix: 64
//     access_log: on              # or off
//     log_format: text            # or json: every log line one JSON object (ts, level, msg, ...)
//     grpc_listen: 127.0.0.1:8081 # Envoy's rate limit service (gRPC); off when absent
//     dashboard: on               # or off: GET /dashboard and GET /v1/stats
//     dashboard_keys: masked      # or clear: the top denied keys in /v1/stats and the page
//     unknown_attributes: reject  # or ignore: /v1/check attributes that no layer reads
//   backend:
//     url: memory                 # or redis://host:port/db, rediss://, redis+cluster://,
//                                 #    redis+sentinel://host:port,host:port/MASTER_NAME
//     key_prefix: spillway
//     key_hash: sha256            # or hmac-sha256 (with key_secret_file), or none: how key
//                                 #    names carry callers' values (spillway/key_hash.h)
//     key_secret_file: /etc/spillway/key-secret   # HMAC's secret, >= 16 bytes; implies hmac
//     timeout: 50ms               # per check, time queued included
//     on_error: allow             # or deny, or local (what to answer when the backend fails)
//     tls:                        # rediss:// only; URL parameters tls_* win over these
//       ca_file: /etc/ssl/redis-ca.pem
//       cert_file: /etc/spillway/client.pem   # mutual TLS, with key_file
//       key_file: /etc/spillway/client.key
//       server_name: redis.internal           # when it differs from the URL's host
//       insecure: false                       # true: no verification (tests only)
//     breaker_failures: 5         # Redis: failures in a row that open the circuit (0: never)
//     breaker_probe: 1s           # while open, one probe per interval
//     over_limit_cache: 100000    # Redis: an exact local cache of denials (keys); 0 = off
//     require_at_start: false     # true: serve exits 1 if the backend does not answer at start
//   tenants:
//     until_loaded: deny          # or defaults: source: store layers before the records loaded
//   rls:                          # the rules of the gRPC listener
//     config: /etc/spillway/ratelimit   # a YAML file or a directory (envoyproxy/ratelimit's)
//     charge_on_deny: false       # true: charge the descriptors that admit on a denied request
//     response_headers: off       # or draft (RateLimit-*), or x-ratelimit (X-RateLimit-*)
//     on_error: error             # or allow, or deny (default: a gRPC error status)
//     watch: 1s                   # how often the files are compared for a change; 0 = never
//     tenant_key: api_key         # the descriptor key carrying a tenant: blocks apply there too
//   layers:
//     - name: edge
//       key: [ip]
//       algorithm: gcra
//       limit: 1000/min
//       burst: 1000               # optional
//       mode: enforce             # or shadow: counts would-be denials, never denies
//     - name: gateway
//       key: [api_key]
//       by_plan:
//         attribute: api_key      # optional, default api_key
//         default: free
//         plans: {free: 60/min, pro: 600/min}
//         keys: {k1: pro, k2: free}
//     - name: endpoint
//       key: [api_key, endpoint]
//       by_endpoint:
//         attribute: endpoint     # optional, default endpoint
//         limits: {/search: 10/min, /export: 5/min, "POST /orders/{id}": 5/min, /files/**: 3/min}
//         case_sensitive: false   # true: "/Search" is not "/search"
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "spillway/key_hash.h"
#include "spillway/policy_spec.h"
#include "spillway/tls_options.h"
#include "src/config/on_error.h"
#include "src/policy/client_address.h"
#include "src/policy/ip.h"

namespace spillway::policy {

// server.tls: TLS on the decision, admin and gRPC listeners (docs/SPEC.md §5.2).
struct ServerTlsConfig {
  std::string cert_file;       // PEM: the certificate chain, leaf first
  std::string key_file;        // PEM: its private key
  std::string client_ca_file;  // PEM: CAs a client certificate must chain to; "" = none asked
  friend bool operator==(const ServerTlsConfig&, const ServerTlsConfig&) = default;
};

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";
  int threads = 2;
  std::vector<Cidr> trusted_proxies;
  ClientIpHeader client_ip_header = ClientIpHeader::kXForwardedFor;  // set by trusted proxies
  int ipv6_prefix = 64;
  bool access_log = true;           // one line per request on stderr
  bool log_json = false;            // log_format: json (every stderr line one JSON object)
  std::string grpc_listen;          // Envoy's rate limit service over gRPC; "" = off
  bool dashboard = true;            // GET /dashboard and its data, GET /v1/stats
  bool dashboard_mask_keys = true;  // top denied keys in /v1/stats: masked, or in clear
  // POST /v1/check with an attribute no layer reads: a 400 naming it (false: ignored)
  bool reject_unknown_attributes = true;
  // The admin API (tenants) on its own listener, never the decision port; "" = off. Requires
  // admin_token_file: lines "<name> <token>" (or a lone token, named "admin").
  std::string admin_listen;
  std::string admin_token_file;
  // Open connections one peer (an IPv4 address, an IPv6 /64) may hold: on the decision listener
  // (0: no cap, the default: behind a proxy every caller is the proxy) and on the admin listener
  // (of its 64), so that an idle flood from one address cannot hold every slot.
  std::size_t max_connections_per_peer = 0;
  std::size_t admin_max_connections_per_peer = 8;
  std::optional<ServerTlsConfig> tls;  // none: plain HTTP and gRPC
  // Usage-based limits: how long a reservation ("reserve": true) waits for its commit or cancel
  // before it expires with its estimate charged.
  std::chrono::milliseconds reservation_ttl{10 * 60 * 1000};
  // The memory backend's bound on open reservations (and, separately, on settled ids remembered
  // until their ttl): beyond it a reserve is refused with a 503, nothing charged. 1..100,000,000.
  std::int64_t max_reservations = 1'000'000;
  // Shaping (a layer's max_delay): how many GET /v1/auth answers may be held at once, each until
  // its delay has passed; one more is denied (403), its charge kept. 0..1,000,000; 0: none held.
  std::int64_t max_delayed = 10'000;
  friend bool operator==(const ServerConfig&, const ServerConfig&) = default;
};

// backend.tls: the backend's own settings type (spillway/tls_options.h), under the config's name.
using TlsConfig = TlsOptions;

struct BackendConfig {
  std::string url = "memory";
  std::string key_prefix = "spillway";
  std::chrono::milliseconds timeout{50};
  OnError on_error = kDefaultOnError;  // src/config/on_error.h
  int breaker_failures = 5;            // CircuitBreakerStore around a Redis backend; 0 = no breaker
  std::chrono::milliseconds breaker_probe{1000};
  std::optional<TlsConfig> tls;
  std::size_t over_limit_cache = 0;  // Redis: keys of the exact local cache of denials; 0 = off
  // Redis: the most checks in one script call (1 to 4096; 1: no batching), and the script calls
  // in flight per algorithm before checks wait to be batched (1 to 4096). Unset: the store's
  // defaults (RedisStoreOptions: 128 and 2).
  std::optional<int> max_batch;
  std::optional<int> max_in_flight;
  // Redis: durability "async" (0, the default: answered as the primary replies) or "replicated"
  // (1: every write also held by a replica before the answer; RedisStoreOptions::replica_acks).
  int replica_acks = 0;
  // serve: a backend that does not answer within its connect timeout at start is fatal (exit 1)
  // instead of a warning (then on_error answers until it does).
  bool require_at_start = false;
  // How the backend's key names carry callers' values (spillway/key_hash.h): sha256 (default),
  // hmac-sha256 with the secret in key_secret_file (read by serve and validate, not here), none.
  KeyHash key_hash = KeyHash::kSha256;
  std::string key_secret_file;
  // memory: the file that keeps tenant records across restarts ("" = in the process only).
  std::string tenants_file;
  friend bool operator==(const BackendConfig&, const BackendConfig&) = default;
};

// Envoy's rate limit service (gRPC): its rules and how it answers.
// The rate limit headers it adds (src/rls/rls_engine.h's ResponseHeaders is this enum): none,
// RateLimit-* (draft) or X-RateLimit-*.
enum class RlsHeaders { kOff, kDraft, kXRateLimit };
enum class RlsOnError { kError, kAllow, kDeny };
struct RlsConfig {
  std::string config;           // a rules file or directory (envoyproxy/ratelimit's format)
  bool charge_on_deny = false;  // true: charge every descriptor that admits, as envoyproxy does
  RlsHeaders response_headers = RlsHeaders::kOff;
  RlsOnError on_error = RlsOnError::kError;  // error: a gRPC status; Envoy's failure_mode_deny
  std::chrono::milliseconds watch{1000};     // how often the rules are checked for changes; 0 off
  // The descriptor key whose value is a tenant record's key (e.g. api_key): a blocked caller is
  // OVER_LIMIT on ShouldRateLimit and DENY_ALL on RLQS too. "": records do not apply there.
  std::string tenant_key;
  friend bool operator==(const RlsConfig&, const RlsConfig&) = default;
};

// Where each field was written: its path ("backend.url", "backend.tls.ca_file") -> 1-based line,
// for the errors found after parsing (src/cli/preflight.h). Not part of what a config means:
// two configs compare equal whatever their lines.
struct FieldLines {
  std::map<std::string, int> by_path;
  // The line of `path`, or 0 when the file did not write it.
  int of(const std::string& path) const {
    auto it = by_path.find(path);
    return it == by_path.end() ? 0 : it->second;
  }
  friend bool operator==(const FieldLines&, const FieldLines&) { return true; }
};

// `tenants:`: what `source: store` layers decide before this instance's copy of the tenant
// records was first loaded (spillway/policy_spec.h's UntilLoaded; default deny).
struct TenantsConfig {
  UntilLoaded until_loaded = UntilLoaded::kDeny;
  friend bool operator==(const TenantsConfig&, const TenantsConfig&) = default;
};

struct Config {
  ServerConfig server;
  BackendConfig backend;
  RlsConfig rls;
  TenantsConfig tenants;
  PolicySpec policy;  // layers; validated: names unique, key attributes non-empty, one selector
  FieldLines lines;
  friend bool operator==(const Config&, const Config&) = default;
};

// The configuration used when `spillway serve` gets no --config: defaults above + seed policy.
Config default_config();

// Parses and validates YAML text. Unknown fields are errors (they are usually typos). The error
// lists every mistake found, one line each ("line N: path: what", in file order within a
// section): a bad field does not hide the next one, nor a bad section or layer the next.
Result<Config> parse_config(std::string_view yaml_text);
// load_config_file also resolves the file's relative paths (resolve_config_paths).
Result<Config> load_config_file(const std::string& path);

// Every file path the config names (server.admin_token_file, server.tls.*_file,
// backend.key_secret_file, backend.tenants_file, backend.tls.*_file, rls.config) that is
// relative, made relative to the directory of `config_path` instead of the working directory.
// A config path without a directory ("spillway.yaml") changes nothing.
void resolve_config_paths(Config& config, const std::string& config_path);

// parse_config's two halves, for `spillway validate`, which also checks what the file names
// (src/cli/preflight.h) when the file has errors: the config as far as it could be read (a field
// with an error keeps its default) and every error, one line each, in file order.
struct ConfigReport {
  Config config;
  std::vector<std::string> errors;
};
ConfigReport read_config(std::string_view yaml_text);
// The text of a config file; the error names the path and why it cannot be read.
Result<std::string> read_config_file(const std::string& path);

}  // namespace spillway::policy
