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

void AdminService::handle(HttpRequest request, Responder respond) {
  const std::optional<std::string> who = authenticate(request);
  if (!who) return respond(refused(request));
  const std::string_view path = target_path(request.target);
  const std::string_view query = target_query(request.target);
  if (auto refused_body = too_large(path, request.body.size())) {
    return respond(std::move(*refused_body));
  }
  if (path == kTenantsPath) {
    if (request.method != "GET") {
      HttpResponse response = error_response(405,
                                             "use GET on /v1/tenants (PUT a record at "
                                             "/v1/tenants/{key})");
      response.headers.emplace_back("Allow", "GET");
      return respond(std::move(response));
    }
    return respond(list(query));
  }
  if (path == "/v1/tenants/import") {
    if (request.method != "POST") {
      HttpResponse response = error_response(405,
                                             "use POST on /v1/tenants/import (the tenant whose key "
                                             "is import is /v1/tenants/%69mport)");
      response.headers.emplace_back("Allow", "POST");
      return respond(std::move(response));
    }
    return respond(import(*who, request));
  }
  if (path == kInspectPath) {
    if (request.method != "GET") {
      HttpResponse response = error_response(405, "use GET on /v1/inspect");
      response.headers.emplace_back("Allow", "GET");
      return respond(std::move(response));
    }
    return respond(inspect(query));
  }
  if (!path.starts_with("/v1/tenants/")) {
    return respond(error_response(404, "no such admin endpoint: " + std::string(path) +
                                           " (the admin API serves /v1/tenants and /v1/inspect)"));
  }
  std::string_view segment = path.substr(std::string_view("/v1/tenants/").size());
  std::optional<std::string_view> counters;  // /v1/tenants/{key}/counters/{layer}
  if (const std::size_t slash = segment.find('/'); slash != std::string_view::npos) {
    constexpr std::string_view kCounters = "/counters/";
    if (segment.substr(slash, kCounters.size()) != kCounters) {
      return respond(error_response(404, "no such admin endpoint: " + logged_path(path) +
                                             " (a key holding '/' is sent as %2F)"));
    }
    counters = segment.substr(slash + kCounters.size());
    segment = segment.substr(0, slash);
  }
  const auto key = percent_decoded(segment);
  if (!key) return respond(error_response(400, "the key in the path has a malformed %-escape"));
  if (key->empty()) return respond(error_response(400, "the key in the path is empty"));
  if (key->size() > kMaxTenantKeyBytes) {
    return respond(error_response(400, "the key is " + std::to_string(key->size()) +
                                           " bytes, over the " +
                                           std::to_string(kMaxTenantKeyBytes) + "-byte bound"));
  }
  if (counters) {
    if (request.method != "DELETE") {
      HttpResponse response = error_response(405, "use DELETE to reset a caller's counters");
      response.headers.emplace_back("Allow", "DELETE");
      return respond(std::move(response));
    }
    return respond(reset(*who, *key, *counters));
  }
  const bool record_method =
      request.method == "PUT" || request.method == "GET" || request.method == "DELETE";
  if (record_method) {
    // The key its requests are looked up by, whatever spelling was sent.
    auto spelt = policy_()->tenant_key(*key, ipv6_prefix_());
    if (!spelt) return respond(error_response(400, spelt.error().message));
    if (request.method == "PUT") return respond(put(*who, *spelt, request.body));
    if (request.method == "GET") return respond(get(*spelt));
    return respond(erase(*who, *spelt));
  }
  HttpResponse response = error_response(405, "method " + request.method +
                                                  " is not allowed on a tenant (allow: GET, PUT, "
                                                  "DELETE)");
  response.headers.emplace_back("Allow", "GET, PUT, DELETE");
  return respond(std::move(response));
}

}  // namespace spillway::server
