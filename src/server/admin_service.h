// The admin API (docs/SPEC.md §5.2): tenant records, on a listener of its own
// (server.admin_listen), never on the decision port. Every request needs
// `Authorization: Bearer <token>` with a token of server.admin_token_file; the token is compared
// in constant time (as digests, so its length does not show either); a missing or wrong token is
// a 401 that changes nothing and is logged (at most a line a second).
//
//   PUT    /v1/tenants/{key}   {"plan":"pro"} | {"limits":{"gateway":"1200/min"}} |
//                              {"blocked":true} (they combine); answers the record before and after
//   GET    /v1/tenants/{key}   the record, or 404
//   DELETE /v1/tenants/{key}   removes it (the file's plan or the default applies again), or 404
//   GET    /v1/tenants?plan=&cursor=&limit=   records by id (the key's digest), paged (≤ 1000)
//   POST   /v1/tenants/import  NDJSON ({"key":…,"plan":…} per line) or CSV (text/csv: key,plan)
//   DELETE /v1/tenants/{key}/counters/{layer}   the caller's state in that layer forgotten (every
//                              plan's and route's key; Operation::kReset), e.g. after a limit was
//                              hit by mistake
//   GET    /v1/inspect?NAME=VALUE&…   what `spillway inspect` shows of a request with these
//                              attributes (src/server/inspection.h): each layer that applies, by
//                              the policy in force and the live tenant records, its key and its
//                              state now, read through the serving store with a check of cost 0
//                              (nothing charged). Names and values percent-decoded ('+' is a plus);
//                              an empty, unknown or repeated name, a value over kMaxKeyBytes, a
//                              malformed escape or an `ip` that is no address is a 400 naming it
// {key} is percent-decoded (a key with '/' is sent as %2F), then spelt as the request path spells
// the attribute it names (Policy::tenant_key for records and imports, Policy::keys_of_caller for
// resets; src/policy/caller_value.h): an IP address as its key (IPv4-mapped as IPv4, IPv6 as its
// /64 or server.ipv6_prefix), a path as its canonical path; a key that no request could be keyed
// by is a 400 naming the form expected. A record is checked against the
// current policy: its plan must be a plan of a by_plan layer with `source: store`, its limits
// name such layers with rates their algorithm takes. Bad input is a 400 naming the field (or the
// import's line) and writes nothing.
//
// The caller's values are never written to a log: the access log and the refusal lines show the
// path only (logged_path), and an inspection changes nothing, so it has no audit line.
//
// Audit: every change is one line through `audit`: the token's name, the key masked (the first
// 8 characters of its SHA-256 digest), the record before and after. An import is one line with
// its count.
//
// Tokens: replace_tokens() swaps the whole set at once (serve calls reload_tokens() on SIGHUP); a
// request checked after it returns is checked against the new set only, so a removed token is
// refused from then on.
//
// Thread safety: handle(), check_headers() and the token calls from any number of threads; writes
// are serialised by the directory.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "spillway/key_hash.h"
#include "spillway/policy_engine.h"
#include "spillway/tenant_directory.h"
#include "src/core/rate_limited_log.h"
#include "src/server/http_server.h"
#include "src/server/inspection.h"
#include "src/server/router.h"

namespace spillway::server {

struct AdminToken {
  std::string name;   // for the audit log
  std::string token;  // at least 16 bytes
};

// Reads server.admin_token_file: one token per line, "<name> <token>" or a lone token (named
// "admin"); blank lines and lines starting with '#' skipped. Errors name the file and line: no
// token, a token under 16 bytes, a name that is not letters, digits, '_' or '-', two tokens alike.
Result<std::vector<AdminToken>> read_admin_tokens(const std::string& path);

// What GET /v1/inspect says of the backend, as `spillway inspect` says it (serve fills it in).
struct InspectBackend {
  std::string url;                       // backend.url as it may be shown (no password)
  std::optional<std::string> key_names;  // Redis: backend.key_hash's name
  StoredName stored_name;                // Redis: the key name of a (key, limit); memory: empty
};

class AdminService {
 public:
  // `policy` returns the policy in force (it changes on reload); `audit` gets one line per change;
  // `store` is where counters are reset (the decision endpoints' store; it outlives this);
  // `ipv6_prefix` returns server.ipv6_prefix in force (how an "ip" key is spelt);
  // `inspect_backend` is what GET /v1/inspect names as the backend (`store` is what it reads).
  AdminService(
      std::shared_ptr<TenantDirectory> tenants, Store& store, std::vector<AdminToken> tokens,
      std::function<std::shared_ptr<const policy::Policy>()> policy,
      std::function<void(const std::string&)> audit,
      std::function<int()> ipv6_prefix = [] { return 64; }, InspectBackend inspect_backend = {});

  void handle(HttpRequest request, Responder respond);

  // The tokens in force from now on. Returns how many.
  std::size_t replace_tokens(std::vector<AdminToken> tokens);
  // Reads `path` (read_admin_tokens) and puts its tokens in force; on an error the tokens in force
  // stay and the error says why. Returns how many tokens are in force.
  Result<std::size_t> reload_tokens(const std::string& path);
  std::size_t token_count() const;

  // For HttpServerOptions::check_headers: a request without a valid token is refused (401) before
  // its body is read, and one whose declared body is over kMaxRecordBodyBytes on anything but the
  // import (413), so that no one without a token makes the server buffer a large body.
  std::optional<HttpResponse> check_headers(const HttpRequest& request) const;

  // The path as the access log and the refusal lines show it: a tenant's key replaced by
  // "{key}", the layer of a reset by "{layer}" (keys are secrets; the audit line names the change,
  // masked), never a query (an inspection's attributes), and any path that is not an admin
  // endpoint as spelled (/V1/TENANTS/…, //v1/…) by "other".
  static std::string logged_path(std::string_view path);

  // The largest body the admin listener accepts (an import of a million records fits), and the
  // largest of every other admin request.
  static constexpr std::size_t kMaxBodyBytes = 256 * 1024 * 1024;
  static constexpr std::size_t kMaxRecordBodyBytes = 64 * 1024;
  // Connections the admin listener keeps open at once.
  static constexpr std::size_t kMaxConnections = 64;

 private:
  struct Hashed {
    std::string name;
    std::string digest;
  };
  // What a handler of the route table gets: the token's name, the request, its query, and for the
  // /v1/tenants/{key}… routes the key (decoded and checked) and the layer of a reset.
  struct Call {
    const std::string& who;
    const HttpRequest& request;
    std::string_view query;
    const std::string* key = nullptr;
    std::string_view layer;
  };
  // The admin endpoints (src/server/router.h), in the order they are tried.
  using Route = server::Route<HttpResponse (*)(AdminService& admin, const Call& call)>;
  static const Route kRoutes[];
  // PUT, GET or DELETE /v1/tenants/{key}: the key spelt as requests key it, then put, get, erase.
  HttpResponse record(const Call& call);

  // The name of the token the request carries, or nullopt.
  std::optional<std::string> authenticate(const HttpRequest& request) const;
  // The 401 for a request without a valid token, logged (at most a line a second).
  HttpResponse refused(const HttpRequest& request) const;
  HttpResponse put(const std::string& who, const std::string& key, const std::string& body);
  HttpResponse get(const std::string& key) const;
  HttpResponse erase(const std::string& who, const std::string& key);
  HttpResponse list(std::string_view query) const;
  HttpResponse import(const std::string& who, const HttpRequest& request);
  HttpResponse reset(const std::string& who, const std::string& key, std::string_view layer);
  // GET /v1/inspect: the attributes of `query` resolved by the policy in force, each layer's
  // state read from store_ with cost 0; waits for the store (this listener's own thread).
  HttpResponse inspect(std::string_view query) const;
  std::string masked(std::string_view key) const;

  using TokenSet = std::vector<Hashed>;
  std::shared_ptr<const TokenSet> tokens() const;  // the set in force now

  std::shared_ptr<TenantDirectory> tenants_;
  Store& store_;
  KeyDigest token_digest_;
  mutable std::mutex tokens_mutex_;  // guards tokens_ (the pointer; a set never changes)
  std::shared_ptr<const TokenSet> tokens_;
  std::function<std::shared_ptr<const policy::Policy>()> policy_;
  std::function<void(const std::string&)> audit_;
  std::function<int()> ipv6_prefix_;
  InspectBackend inspect_backend_;
  mutable RateLimitedLog refused_log_;
};

}  // namespace spillway::server
