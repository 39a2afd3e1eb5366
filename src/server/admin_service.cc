#include "src/server/admin_service.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <fstream>
#include <set>

#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/policy/names.h"
#include "src/server/csv_fields.h"
#include "src/server/decision_response.h"
#include "src/server/json_text.h"
#include "src/server/json_unique.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

constexpr std::string_view kTenantsPath = "/v1/tenants";
constexpr std::string_view kInspectPath = "/v1/inspect";
constexpr std::size_t kMaxPage = 1000;

// Bodies larger than kMaxRecordBodyBytes are only for the import: the 413 every other path gets.
std::optional<HttpResponse> too_large(std::string_view path, std::size_t bytes) {
  if (path == "/v1/tenants/import" || bytes <= AdminService::kMaxRecordBodyBytes) {
    return std::nullopt;
  }
  return error_response(413, "a body over " + std::to_string(AdminService::kMaxRecordBodyBytes) +
                                 " bytes is only taken by /v1/tenants/import");
}

// Equal bytes, in time that depends on the length only (both are digests of one length).
bool same_digest(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

// The value of `name` in a query string ("plan=pro&cursor=x"), percent-decoded; nullopt when
// absent or malformed.
std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) == name) {
      return equals == std::string_view::npos ? std::string()
                                              : percent_decoded(pair.substr(equals + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::unexpected<Error> bad(std::string message, std::string field = "") {
  return std::unexpected(Error{Errc::kInvalidArgument, std::move(message), std::move(field)});
}

std::string rate_text(const TenantRate& rate) {
  return std::to_string(rate.limit) + "/" + format_duration(rate.period);
}

void append_record(std::string& out, const TenantRecord& record) {
  out += "{\"plan\":";
  if (record.plan.empty()) {
    out += "null";
  } else {
    append_json_string(out, record.plan);
  }
  out += ",\"limits\":{";
  bool first = true;
  for (const auto& [layer, rate] : record.limits) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, layer);
    out += ':';
    append_json_string(out, rate_text(rate));
  }
  out += "},\"blocked\":";
  out += record.blocked ? "true" : "false";
  out += '}';
}

void append_optional_record(std::string& out, const std::optional<TenantRecord>& record) {
  if (record) {
    append_record(out, *record);
  } else {
    out += "null";
  }
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse from_error(const Error& error) {
  if (error.code == Errc::kInvalidArgument) return error_response(400, error.message);
  return error_response(503, "the tenant store did not answer: " + error.message);
}

// A record as JSON sends it: plan, limits, blocked; any other field is refused by name. `where`
// prefixes messages ("line 3: ").
Result<TenantRecord> record_of(const json::object& object, const std::string& where,
                               std::initializer_list<std::string_view> also_allowed = {}) {
  TenantRecord record;
  for (const auto& [name, value] : object) {
    if (name == "plan") {
      if (value.is_null()) continue;
      if (!value.is_string()) return bad(where + "\"plan\" must be a string", "plan");
      record.plan = std::string(value.as_string());
    } else if (name == "blocked") {
      if (!value.is_bool()) return bad(where + "\"blocked\" must be true or false", "blocked");
      record.blocked = value.as_bool();
    } else if (name == "limits") {
      if (!value.is_object()) {
        return bad(where +
                       "\"limits\" must be an object of layer to rate, e.g. "
                       "{\"gateway\":\"1200/min\"}",
                   "limits");
      }
      for (const auto& [layer, rate_value] : value.as_object()) {
        const std::string field = "limits." + std::string(layer);
        if (!rate_value.is_string()) {
          return bad(where + "\"" + field + "\" must be a rate such as \"1200/min\"", field);
        }
        auto rate = parse_rate(std::string_view(rate_value.as_string()));
        if (!rate) return bad(where + "\"" + field + "\": " + rate.error().message, field);
        record.limits[std::string(layer)] = {rate->limit, rate->period};
      }
    } else if (std::find(also_allowed.begin(), also_allowed.end(), std::string_view(name)) ==
               also_allowed.end()) {
      return bad(where + "unknown field " + quote_for_error(name, 60) +
                     " (a tenant record has plan, limits, blocked)",
                 std::string(name));
    }
  }
  if (auto checked = check_tenant_record(record); !checked) {
    return bad(where + checked.error().message, checked.error().field);
  }
  return record;
}

// Whether the policy can use the record: a plan of a store-sourced by_plan layer, limits for such
// layers that their algorithm accepts.
Result<void> check_against(const policy::Policy& policy, const TenantRecord& record,
                           const std::string& where) {
  std::vector<const policy::LayerSpec*> layers;
  for (const policy::LayerSpec& layer : policy.spec().layers) {
    if (layer.by_plan && layer.by_plan->source == policy::PlanSource::kStore) {
      layers.push_back(&layer);
    }
  }
  if (layers.empty()) {
    return bad(where +
                   "the policy has no by_plan layer with source: store, so a tenant record "
                   "would change nothing; add source: store to a by_plan layer",
               "plan");
  }
  if (!record.plan.empty()) {
    std::set<std::string> plans;
    for (const policy::LayerSpec* layer : layers) {
      for (const auto& [name, rate] : layer->by_plan->plans) plans.insert(name);
    }
    if (!plans.contains(record.plan)) {
      std::string known;
      for (const std::string& name : plans) known += (known.empty() ? "" : ", ") + name;
      return bad(
          where + "plan " + quote_for_error(record.plan, 64) + " is not a plan (" + known + ")",
          "plan");
    }
  }
  for (const auto& [name, rate] : record.limits) {
    const std::string field = "limits." + name;
    auto layer = std::find_if(layers.begin(), layers.end(),
                              [&](const policy::LayerSpec* l) { return l->name == name; });
    if (layer == layers.end()) {
      std::string known;
      for (const policy::LayerSpec* l : layers) known += (known.empty() ? "" : ", ") + l->name;
      return bad(where + "\"" + field + "\": no by_plan layer with source: store is named " +
                     quote_for_error(name, 64) + " (" + known + ")",
                 field);
    }
    if (auto limit = Limit::make((*layer)->algorithm, rate.limit, rate.period); !limit) {
      return bad(where + "\"" + field + "\": " + limit.error().message, field);
    }
  }
  return {};
}

}  // namespace

Result<std::vector<AdminToken>> read_admin_tokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("admin_token_file " + quote_for_error(path) + " cannot be read");
  std::vector<AdminToken> tokens;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = "admin_token_file " + path + " line " + std::to_string(number);
    std::string_view text = trim(line, " \t\r");
    if (text.empty() || text.front() == '#') continue;
    AdminToken token;
    const std::size_t space = text.find_first_of(" \t");
    if (space == std::string_view::npos) {
      token = {"admin", std::string(text)};
    } else {
      token = {std::string(text.substr(0, space)), std::string(trim(text.substr(space + 1)))};
      if (!policy::is_name(token.name)) {
        return invalid_argument(where + ": the name must be letters, digits, '_' or '-'");
      }
    }
    if (token.token.size() < 16 || token.token.find_first_of(" \t") != std::string::npos) {
      return invalid_argument(where + ": a token is at least 16 bytes without spaces");
    }
    for (const AdminToken& other : tokens) {
      if (other.token == token.token) return invalid_argument(where + ": the same token twice");
    }
    tokens.push_back(std::move(token));
  }
  if (tokens.empty()) return invalid_argument("admin_token_file " + path + " holds no token");
  return tokens;
}

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

std::size_t AdminService::replace_tokens(std::vector<AdminToken> tokens) {
  auto hashed = std::make_shared<TokenSet>();
  for (AdminToken& token : tokens) {
    hashed->push_back({std::move(token.name), token_digest_.of(token.token)});
  }
  const std::size_t count = hashed->size();
  const std::lock_guard lock(tokens_mutex_);
  tokens_ = std::move(hashed);
  return count;
}

Result<std::size_t> AdminService::reload_tokens(const std::string& path) {
  auto tokens = read_admin_tokens(path);
  if (!tokens) return std::unexpected(tokens.error());
  return replace_tokens(std::move(*tokens));
}

std::shared_ptr<const AdminService::TokenSet> AdminService::tokens() const {
  const std::lock_guard lock(tokens_mutex_);
  return tokens_;
}

std::size_t AdminService::token_count() const { return tokens()->size(); }

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

std::optional<std::string> AdminService::authenticate(const HttpRequest& request) const {
  const std::string* header = request.header("authorization");
  if (header == nullptr) return std::nullopt;
  std::string_view value = *header;
  if (!ascii_istarts_with(value, "bearer ")) return std::nullopt;
  const std::string digest = token_digest_.of(trim(value.substr(7)));
  const std::shared_ptr<const TokenSet> tokens = this->tokens();
  const std::string* found = nullptr;
  for (const Hashed& token : *tokens) {  // every token compared: the time does not say which
    if (same_digest(token.digest, digest)) found = &token.name;
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

// The first 8 characters of the key's id (its digest: HMAC when the backend has a key secret, so
// a log reader cannot check guesses), or of its SHA-256 when ids are the keys themselves.
std::string AdminService::masked(std::string_view key) const {
  const std::string id =
      tenants_->key_hash() == KeyHash::kNone ? token_digest_.of(key) : tenants_->id_of(key);
  return id.substr(0, 8) + "…";
}

HttpResponse AdminService::refused(const HttpRequest& request) const {
  const bool carried = request.header("authorization") != nullptr;
  refused_log_.write("spillway admin: refused " + std::string(logged_method(request.method)) + " " +
                     quote_for_error(logged_path(request.target), 80) + " from " +
                     request.peer_address + ": " +
                     (carried ? "wrong token" : "no Authorization: Bearer token"));
  HttpResponse response =
      error_response(401, carried ? "the bearer token is not one of server.admin_token_file"
                                  : "the admin API needs Authorization: Bearer <token>");
  response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"spillway-admin\"");
  response.close_connection = true;  // no keep-alive without a token
  return response;
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

HttpResponse AdminService::put(const std::string& who, const std::string& key,
                               const std::string& body) {
  auto parsed = parse_json_unique(body);
  if (!parsed && !parsed.error().duplicate.empty()) {
    return error_response(400, "body: " + parsed.error().message());
  }
  if (!parsed) return error_response(400, "body is not valid JSON: " + parsed.error().message());
  const json::value& value = *parsed;
  if (!value.is_object()) {
    return error_response(400, "body must be a JSON object such as {\"plan\":\"pro\"}");
  }
  auto record = record_of(value.as_object(), "");
  if (!record) return from_error(record.error());
  if (auto fits = check_against(*policy_(), *record, ""); !fits) return from_error(fits.error());
  auto before = tenants_->put(key, *record);
  if (!before) return from_error(before.error());
  audit_("token=" + who + " put tenant=" + masked(key) +
         " before=" + (*before ? describe_tenant_record(**before) : std::string("none")) +
         " after=" + describe_tenant_record(*record));
  std::string out = "{\"id\":";
  append_json_string(out, utf8_or_escaped(tenants_->id_of(key)));
  out += ",\"before\":";
  append_optional_record(out, *before);
  out += ",\"after\":";
  append_record(out, *record);
  out += "}";
  return json_response(200, std::move(out));
}

HttpResponse AdminService::get(const std::string& key) const {
  auto record = tenants_->find(key);
  if (record == nullptr) {
    return error_response(404,
                          "no tenant record for this key (the file's plan or the default "
                          "applies)");
  }
  std::string out = "{\"id\":";
  append_json_string(out, utf8_or_escaped(tenants_->id_of(key)));
  out += ",\"record\":";
  append_record(out, *record);
  out += "}";
  return json_response(200, std::move(out));
}

HttpResponse AdminService::erase(const std::string& who, const std::string& key) {
  auto before = tenants_->erase(key);
  if (!before) return from_error(before.error());
  if (!*before) return error_response(404, "no tenant record for this key: nothing deleted");
  audit_("token=" + who + " delete tenant=" + masked(key) +
         " before=" + describe_tenant_record(**before) + " after=none");
  std::string out = "{\"deleted\":true,\"before\":";
  append_record(out, **before);
  out += "}";
  return json_response(200, std::move(out));
}

HttpResponse AdminService::reset(const std::string& who, const std::string& key,
                                 std::string_view layer) {
  auto checks = policy_()->keys_of_caller(layer, key, ipv6_prefix_());
  if (!checks) return from_error(checks.error());
  std::vector<KeyedLimit> keys;
  for (const policy::Policy::Check& check : *checks) keys.push_back({check.key, check.limit});
  auto request = StoreRequest::make(keys, 0, std::nullopt, Operation::kReset);
  if (!request) return from_error(request.error());
  // The admin listener's own thread waits: the backend answers on its I/O threads.
  Result<Decisions> done = store_.decide_and_wait(*request);
  if (!done) return error_response(503, "the backend did not reset: " + done.error().message);
  std::size_t forgotten = 0;
  for (const Decision& d : *done) forgotten += d.allowed ? 1 : 0;
  // Every other instance on this backend forgets the denials it remembers (within the time a
  // record change takes to reach it); this one already has.
  const Result<void> announced = tenants_->announce_reset();
  const std::string name(layer);
  audit_("token=" + who + " reset tenant=" + masked(key) + " layer=" + name +
         " keys=" + std::to_string(keys.size()) + " held_state=" + std::to_string(forgotten) +
         (announced ? "" : " not_announced=" + quote_for_error(announced.error().message, 120)));
  std::string out = "{\"layer\":\"" + name + "\",\"keys\":" + std::to_string(keys.size()) +
                    ",\"held_state\":" + std::to_string(forgotten) + ",\"announced\":";
  if (announced) {
    out += "true}";
  } else {
    // The reset is done here and in the shared store; instances that remember a denial of this
    // caller keep it until its retry_after runs out.
    out += "false,\"announce_error\":";
    append_json_string(out, announced.error().message);
    out += "}";
  }
  return json_response(200, std::move(out));
}

HttpResponse AdminService::inspect(std::string_view query) const {
  const std::shared_ptr<const policy::Policy> policy = policy_();
  const std::vector<std::string>& used = policy->attributes_used();
  if (query.empty()) {
    return error_response(400,
                          "give the request's attributes as query parameters, e.g. "
                          "/v1/inspect?api_key=...&ip=203.0.113.7&endpoint=/search");
  }
  policy::Attributes attributes;
  for (std::size_t number = 1;; ++number) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.empty()) {
      return error_response(400,
                            "an empty parameter ('&' at an end or twice in a row): each "
                            "parameter is NAME=VALUE");
    }
    const std::size_t equals = pair.find('=');
    // Only the part before '=' is ever quoted back: a value may be a caller's key.
    if (equals == std::string_view::npos) {
      return error_response(
          400, "parameter " + std::to_string(number) + " has no '=': each parameter is NAME=VALUE");
    }
    const auto name = percent_decoded(pair.substr(0, equals));
    if (!name) return error_response(400, "a parameter's name has a malformed %-escape");
    if (name->empty()) {
      return error_response(400, "a parameter has an empty name (=VALUE): each is NAME=VALUE");
    }
    if (!std::binary_search(used.begin(), used.end(), *name)) {
      std::string known;
      for (const std::string& attribute : used) known += (known.empty() ? "" : ", ") + attribute;
      return error_response(
          400, "unknown attribute " + quote_for_error(*name, 64) + ": the policy uses " + known);
    }
    auto value = percent_decoded(pair.substr(equals + 1));
    if (!value) {
      return error_response(400,
                            "attribute " + quote_for_error(*name) + " has a malformed %-escape");
    }
    if (value->size() > kMaxKeyBytes) {
      return error_response(400, "attribute " + quote_for_error(*name) + " is " +
                                     std::to_string(value->size()) + " bytes, over the " +
                                     std::to_string(kMaxKeyBytes) + "-byte bound");
    }
    if (*name == policy::kIpAttribute) {
      // As the decision endpoints key it; the key form ("10.0.0.1/32") is taken too.
      auto ip = policy::ip_attribute_key(*value, ipv6_prefix_(), true);
      if (!ip) return error_response(400, ip.error().message);
      value = std::move(*ip);
    }
    if (!attributes.emplace(*name, std::move(*value)).second) {
      return error_response(400, "attribute " + quote_for_error(*name) + " is given twice");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  auto checks = policy->resolve(attributes);
  if (!checks) {
    if (checks.error().code == Errc::kInvalidArgument) {
      return error_response(400, checks.error().message);
    }
    return error_response(503, checks.error().message);
  }
  Inspection inspection{
      .backend = inspect_backend_.url,
      .key_names = inspect_backend_.key_names,
      .plans_from_config = false,
      .layers = inspect_layers(*policy, *checks, &store_, inspect_backend_.stored_name)};
  return json_response(200, inspection_json(inspection));
}

HttpResponse AdminService::list(std::string_view query) const {
  std::string plan, cursor;
  for (auto [name, value] : {std::pair{"plan", &plan}, std::pair{"cursor", &cursor}}) {
    if (query.find(std::string(name) + "=") == std::string_view::npos) continue;
    auto decoded = query_value(query, name);
    if (!decoded) {
      return error_response(400, "\"" + std::string(name) + "\" has a malformed %-escape");
    }
    *value = std::move(*decoded);
  }
  std::size_t limit = 100;
  if (auto text = query_value(query, "limit")) {
    std::size_t parsed = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
    if (ec != std::errc() || end != text->data() + text->size() || parsed == 0 ||
        parsed > kMaxPage) {
      return error_response(
          400, "\"limit\" must be a whole number from 1 to " + std::to_string(kMaxPage));
    }
    limit = parsed;
  }
  const TenantPage page = tenants_->list(plan, cursor, limit);
  std::string out = "{\"tenants\":[";
  for (std::size_t i = 0; i < page.entries.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"id\":";
    append_json_string(out, utf8_or_escaped(page.entries[i].id));
    out += ",\"record\":";
    append_record(out, page.entries[i].record);
    out += '}';
  }
  out += "],\"next_cursor\":";
  if (page.next_cursor.empty()) {
    out += "null";
  } else {
    append_json_string(out, utf8_or_escaped(page.next_cursor));
  }
  out += ",\"total\":" + std::to_string(tenants_->size()) + "}";
  return json_response(200, std::move(out));
}

HttpResponse AdminService::import(const std::string& who, const HttpRequest& request) {
  const std::string* type = request.header("content-type");
  const bool csv = type != nullptr && type->size() >= 8 && ascii_istarts_with(*type, "text/csv");
  const std::shared_ptr<const policy::Policy> policy = policy_();
  std::vector<std::pair<std::string, TenantRecord>> records;
  std::string_view body = request.body;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 BOM (spreadsheets)
  std::size_t number = 0;
  while (!body.empty()) {
    const std::size_t end = body.find('\n');
    std::string_view line = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    std::string key;
    TenantRecord record;
    if (csv) {
      // RFC 4180: "k,1",pro is the key k,1; "say ""hi""" is say "hi".
      auto fields = csv_fields(line);
      if (!fields) return error_response(400, where + fields.error().message);
      if (fields->size() != 2) {
        return error_response(400, where + "a CSV line is key,plan (this one has " +
                                       std::to_string(fields->size()) + " field" +
                                       (fields->size() == 1 ? "" : "s") + ")");
      }
      if (number == 1 && (*fields)[0] == "key" && (*fields)[1] == "plan") continue;  // a header
      key = std::move((*fields)[0]);
      record.plan = std::move((*fields)[1]);
      if (trim(key) != key || trim(record.plan) != record.plan) {
        return error_response(400, where +
                                       "spaces around the key or the plan (CSV is key,plan "
                                       "with nothing around either)");
      }
      if (auto checked = check_tenant_record(record); !checked) {
        return error_response(400, where + checked.error().message);
      }
    } else {
      auto line_value = parse_json_unique(line);
      if (!line_value && !line_value.error().duplicate.empty()) {
        return error_response(400, where + line_value.error().message());
      }
      if (!line_value || !line_value->is_object()) {
        return error_response(400, where +
                                       "not a JSON object (NDJSON: one record per line, "
                                       "{\"key\":\"…\",\"plan\":\"pro\"})");
      }
      const json::object& object = line_value->as_object();
      const json::value* key_value = object.if_contains("key");
      if (key_value == nullptr || !key_value->is_string()) {
        return error_response(400, where + "\"key\" must be a string");
      }
      key = std::string(key_value->as_string());
      auto parsed = record_of(object, where, {"key"});
      if (!parsed) return from_error(parsed.error());
      record = std::move(*parsed);
    }
    if (key.empty() || key.size() > kMaxTenantKeyBytes) {
      return error_response(
          400, where + "the key must be 1 to " + std::to_string(kMaxTenantKeyBytes) + " bytes");
    }
    auto spelt = policy->tenant_key(key, ipv6_prefix_());
    if (!spelt) return error_response(400, where + spelt.error().message);
    key = std::move(*spelt);
    if (auto fits = check_against(*policy, record, where); !fits) return from_error(fits.error());
    records.emplace_back(std::move(key), std::move(record));
  }
  auto written = tenants_->put_many(records);
  if (!written) return from_error(written.error());
  audit_("token=" + who + " import records=" + std::to_string(*written));
  return json_response(200, "{\"imported\":" + std::to_string(*written) + "}");
}

}  // namespace spillway::server
