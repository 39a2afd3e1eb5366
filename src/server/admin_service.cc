// The admin API (src/server/admin_service.h): its construction, the routing of a request to its
// handler (after its token is checked: admin_tokens.cc), the check of a request's headers before
// its body is read, the paths the logs show, and the masked keys of audit lines. The handlers:
// tenant records admin_tenants.cc, the import admin_import.cc, counter resets admin_counters.cc,
// GET /v1/inspect admin_inspect.cc; records to and from JSON admin_records.cc.
// Thread safety: handle() and check_headers() from any number of threads.
#include "src/server/admin_service.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/text.h"
#include "src/server/decision_response.h"

namespace spillway::server {
namespace {

constexpr std::string_view kTenantsPath = "/v1/tenants";
constexpr std::string_view kInspectPath = "/v1/inspect";

// Bodies larger than kMaxRecordBodyBytes are only for the import: the 413 every other path gets.
std::optional<HttpResponse> too_large(std::string_view path, std::size_t bytes) {
  if (path == "/v1/tenants/import" || bytes <= AdminService::kMaxRecordBodyBytes) {
    return std::nullopt;
  }
  return error_response(413, "a body over " + std::to_string(AdminService::kMaxRecordBodyBytes) +
                                 " bytes is only taken by /v1/tenants/import");
}

}  // namespace

AdminService::AdminService(std::shared_ptr<TenantDirectory> tenants, Store& store,
                           std::vector<AdminToken> tokens,
                           std::function<std::shared_ptr<const policy::Policy>()> policy,
                           std::function<void(const std::string&)> audit,
                           std::function<int()> ipv6_prefix, InspectBackend inspect_backend)
    : tenants_(std::move(tenants)),
      store_(store),
      token_digest_(*KeyDigest::make({})),
      policy_(std::move(policy)),
      audit_(std::move(audit)),
      ipv6_prefix_(std::move(ipv6_prefix)),
      inspect_backend_(std::move(inspect_backend)) {
  replace_tokens(std::move(tokens));
}

std::string AdminService::logged_path(std::string_view path) {
  path = target_path(path);
  if (path == "-" || path == kTenantsPath || path == "/v1/tenants/import" || path == kInspectPath) {
    return std::string(path);
  }
  constexpr std::string_view kPrefix = "/v1/tenants/";
  if (path.starts_with(kPrefix)) {
    // Whatever follows the key is masked too: with an unencoded '/', part of the key is there.
    return path.find("/counters/", kPrefix.size()) == std::string_view::npos
               ? "/v1/tenants/{key}"
               : "/v1/tenants/{key}/counters/{layer}";
  }
  // Any other spelling (/V1/TENANTS/…, //v1/tenants/…, a key pasted anywhere) is not an admin
  // endpoint, and may hold a key: not shown.
  return "other";
}

// The first 8 characters of the key's id (its digest: HMAC when the backend has a key secret, so
// a log reader cannot check guesses), or of its SHA-256 when ids are the keys themselves.
std::string AdminService::masked(std::string_view key) const {
  const std::string id =
      tenants_->key_hash() == KeyHash::kNone ? token_digest_.of(key) : tenants_->id_of(key);
  return id.substr(0, 8) + "…";
}

std::optional<HttpResponse> AdminService::check_headers(const HttpRequest& request) const {
  if (!authenticate(request)) return refused(request);
  const std::string_view path = target_path(request.target);
  const std::string* length = request.header("content-length");
  std::size_t bytes = 0;
  if (length == nullptr ||
      std::from_chars(length->data(), length->data() + length->size(), bytes).ec != std::errc()) {
    return std::nullopt;  // the HTTP parser answers a malformed length itself
  }
  return too_large(path, bytes);
}

// Exact paths before the templates that would match them too (/v1/tenants/import).
const AdminService::Route AdminService::kRoutes[] = {
    {kTenantsPath, "GET",
     [](AdminService& admin, const Call& call) { return admin.list(call.query); },
     "use GET on /v1/tenants (PUT a record at /v1/tenants/{key})"},
    {"/v1/tenants/import", "POST",
     [](AdminService& admin, const Call& call) { return admin.import(call.who, call.request); },
     "use POST on /v1/tenants/import (the tenant whose key is import is /v1/tenants/%69mport)"},
    {kInspectPath, "GET",
     [](AdminService& admin, const Call& call) { return admin.inspect(call.query); },
     "use GET on /v1/inspect"},
    {"/v1/tenants/{key}/counters/*", "DELETE",
     [](AdminService& admin, const Call& call) {
       return admin.reset(call.who, *call.key, call.layer);
     },
     "use DELETE to reset a caller's counters"},
    {"/v1/tenants/{key}", "GET, PUT, DELETE",
     [](AdminService& admin, const Call& call) { return admin.record(call); },
     "method {method} is not allowed on a tenant (allow: {allow})"},
};

void AdminService::handle(HttpRequest request, Responder respond) {
  const std::optional<std::string> who = authenticate(request);
  if (!who) return respond(refused(request));
  const std::string_view path = target_path(request.target);
  const std::string_view query = target_query(request.target);
  if (auto refused_body = too_large(path, request.body.size())) {
    return respond(std::move(*refused_body));
  }
  RouteCaptures captures;
  const Route* route = find_route(kRoutes, path, captures);
  if (route == nullptr) {
    if (path.starts_with("/v1/tenants/")) {
      return respond(error_response(404, "no such admin endpoint: " + logged_path(path) +
                                             " (a key holding '/' is sent as %2F)"));
    }
    return respond(error_response(404, "no such admin endpoint: " + std::string(path) +
                                           " (the admin API serves /v1/tenants and /v1/inspect)"));
  }
  Call call{.who = *who, .request = request, .query = query};
  std::optional<std::string> key;
  if (captures.count > 0) {  // /v1/tenants/{key}…: the key is checked before the method
    key = percent_decoded(captures.values[0]);
    if (!key) return respond(error_response(400, "the key in the path has a malformed %-escape"));
    if (key->empty()) return respond(error_response(400, "the key in the path is empty"));
    if (key->size() > kMaxTenantKeyBytes) {
      return respond(error_response(400, "the key is " + std::to_string(key->size()) +
                                             " bytes, over the " +
                                             std::to_string(kMaxTenantKeyBytes) + "-byte bound"));
    }
    call.key = &*key;
    if (captures.count > 1) call.layer = captures.values[1];
  }
  if (auto refused_method = refuse_method(*route, request.method, path)) {
    return respond(std::move(*refused_method));
  }
  return respond(route->handler(*this, call));
}

HttpResponse AdminService::record(const Call& call) {
  // The key its requests are looked up by, whatever spelling was sent.
  auto spelt = policy_()->tenant_key(*call.key, ipv6_prefix_());
  if (!spelt) return error_response(400, spelt.error().message);
  if (call.request.method == "PUT") return put(call.who, *spelt, call.request.body);
  if (call.request.method == "GET") return get(*spelt);
  return erase(call.who, *spelt);
}

}  // namespace spillway::server
