#include "src/server/service.h"

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <random>

#include "src/core/backend_schemes.h"
#include "src/core/metrics_text.h"
#include "src/core/text.h"
#include "src/pages/dashboard_page.h"
#include "src/policy/keys.h"
#include "src/server/decision_response.h"
#include "src/server/stats.h"

namespace spillway::server {
namespace json = boost::json;
using policy::Attributes;
using policy::LayerDecision;
using policy::Policy;
using policy::PolicyDecision;
namespace {

using Clock = std::chrono::steady_clock;

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// Reads a JSON object body; the error names what is wrong and, for a syntax error, where: the
// offset of the first byte that cannot be JSON there, from 0 ("body is not valid JSON at byte
// 16: syntax error"; the body's length when it ends too soon). The value's memory comes from
// `resource` (a stack buffer for the usual small body), so it must not outlive it.
Result<json::object> parse_object(const std::string& body, json::monotonic_resource& resource) {
  unsigned char scratch[512];  // the parser's own stack, for the usual nesting
  json::parser parser(json::storage_ptr(), json::parse_options(), scratch, sizeof scratch);
  parser.reset(json::storage_ptr(&resource));
  boost::system::error_code ec;
  const std::size_t parsed = parser.write(body.data(), body.size(), ec);
  if (ec) {
    return invalid_argument("body is not valid JSON at byte " + std::to_string(parsed) + ": " +
                            ec.message());
  }
  json::value value = parser.release();
  if (!value.is_object()) return invalid_argument("body must be a JSON object");
  return std::move(value.as_object());
}

// Whether `method` is one of `allow` ("GET, HEAD").
bool allows(std::string_view allow, std::string_view method) {
  while (!allow.empty()) {
    const std::size_t comma = allow.find(", ");
    if (allow.substr(0, comma) == method) return true;
    if (comma == std::string_view::npos) break;
    allow.remove_prefix(comma + 2);
  }
  return false;
}

Result<std::int64_t> whole_number(const json::value& v, std::string_view field) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(kMaxExact)) {
    return static_cast<std::int64_t>(v.as_uint64());
  }
  return invalid_argument("\"" + std::string(field) + "\" must be a whole number");
}

Result<std::string> text(const json::value& v, std::string_view field) {
  if (!v.is_string()) return invalid_argument("\"" + std::string(field) + "\" must be a string");
  return std::string(v.as_string());
}

// The "ip" attribute as its edge key: IPv4 whole, IPv6 by prefix. Invalid -> error.
Result<std::string> normalize_ip(std::string_view text_ip, int ipv6_prefix) {
  auto ip = policy::parse_ip(text_ip);
  if (!ip) return invalid_argument("\"ip\": " + ip.error().message);
  return policy::ip_key(*ip, ipv6_prefix);
}

bool uses_attribute(const Policy& policy, std::string_view name) {
  const std::vector<std::string>& used = policy.attributes_used();
  return std::binary_search(used.begin(), used.end(), name);
}

std::string unknown_attribute_message(const Policy& policy, std::string_view name) {
  std::string message = "unknown attribute " + quote_for_error(name, 100) + ": the policy uses ";
  const std::vector<std::string>& used = policy.attributes_used();
  for (std::size_t i = 0; i < used.size(); ++i) {
    message.append(i == 0 ? "" : ", ").append(used[i]);
  }
  return message.append(" (and \"cost\"); server.unknown_attributes: ignore accepts others");
}

// How many lines of this (lower-case) header the request has.
std::size_t header_lines(const HttpRequest& request, std::string_view name) {
  return static_cast<std::size_t>(std::count_if(request.headers.begin(), request.headers.end(),
                                                [&](const auto& h) { return h.first == name; }));
}

std::string_view header_display_name(std::string_view name) {
  return name == "x-original-uri" ? "X-Original-URI" : "X-Original-Method";
}

// GET /v1/auth builds its attributes from headers: a missing or bad attribute is named with the
// header that carries it, or as one the endpoint cannot provide.
std::string auth_attribute_message(const Error& error) {
  if (error.field == "endpoint") return "X-Original-URI: " + error.message;
  if (error.field == policy::kMethodAttribute) return "X-Original-Method: " + error.message;
  if (error.field == "api_key") return "X-API-Key: " + error.message;
  if (error.field == "ip" || error.field.empty()) return error.message;
  return error.message +
         "; /v1/auth provides only ip (the client address), api_key (X-API-Key), endpoint "
         "(X-Original-URI) and method (X-Original-Method): use POST /v1/check for other "
         "attributes";
}

}  // namespace

std::string auth_attributes_text() {
  std::string text;
  for (std::string_view attribute : kAuthAttributes) {
    text.append(text.empty() ? "" : ", ").append(attribute);
  }
  return text;
}

Result<std::shared_ptr<Service::Settings>> Service::build(const policy::Config& config) {
  auto built = Policy::make(config.policy);
  if (!built) return std::unexpected(built.error());
  auto settings = std::make_shared<Settings>();
  settings->policy = *built;
  settings->trusted_proxies = config.server.trusted_proxies;
  settings->client_ip_header = config.server.client_ip_header;
  settings->ipv6_prefix = config.server.ipv6_prefix;
  settings->on_error = config.backend.on_error;
  settings->dashboard = config.server.dashboard;
  settings->mask_keys = config.server.dashboard_mask_keys;
  settings->reject_unknown_attributes = config.server.reject_unknown_attributes;
  const BackendScheme* scheme = find_backend_scheme(config.backend.url);
  settings->backend_kind = scheme != nullptr
                               ? std::string(scheme->name)
                               : config.backend.url.substr(0, config.backend.url.find("://"));
  settings->loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  return settings;
}

namespace {
std::atomic<std::uint64_t> next_service_id{1};
}  // namespace

Service::Service(std::unique_ptr<Store> store)
    : store_(std::move(store)),
      id_(next_service_id.fetch_add(1, std::memory_order_relaxed)),
      mask_salt_((static_cast<std::uint64_t>(std::random_device()()) << 32) ^
                 std::random_device()()) {}

Result<std::unique_ptr<Service>> Service::make(const policy::Config& config,
                                               std::unique_ptr<Store> store) {
  auto settings = build(config);
  if (!settings) return std::unexpected(settings.error());
  std::unique_ptr<Service> service(new Service(std::move(store)));
  service->settings_ = *settings;
  return service;
}

Result<void> Service::reload(const policy::Config& config) {
  auto settings = build(config);
  if (!settings) return std::unexpected(settings.error());
  std::lock_guard lock(settings_mutex_);
  (*settings)->version = settings_->version + 1;
  (*settings)->backend_kind = settings_->backend_kind;  // the store changes only at a restart
  settings_ = *settings;
  settings_version_.fetch_add(1, std::memory_order_release);
  store_->clear_caches();  // limits may have changed: forget remembered denials
  return {};
}

const std::shared_ptr<const Service::Settings>& Service::settings() const {
  // This thread's copy, refreshed when a reload changed the version: a request takes no lock
  // and touches no shared reference count.
  struct Cache {
    std::uint64_t service = 0;
    std::uint64_t version = 0;
    std::shared_ptr<const Settings> settings;
  };
  thread_local Cache cache;
  if (cache.service != id_ || cache.version != settings_version_.load(std::memory_order_acquire)) {
    std::lock_guard lock(settings_mutex_);
    cache.settings = settings_;
    cache.version = settings_version_.load(std::memory_order_relaxed);
    cache.service = id_;
  }
  return cache.settings;
}

void Service::Reply::operator()(HttpResponse response) const {
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  service->metrics_.request(endpoint, response.status, elapsed.count());
  respond(std::move(response));
}

void Service::handle(HttpRequest request, Responder respond) {
  // HEAD is allowed wherever GET is: the connection sends the headers without the body.
  static constexpr Route kRoutes[] = {
      {"/v1/check", "POST", &Service::check},
      {"/v1/limit", "POST", &Service::limit},
      {"/v1/auth", "GET, HEAD", &Service::auth},
      {"/metrics", "GET, HEAD", &Service::metrics_text},
      {"/healthz", "GET, HEAD", &Service::healthz},
      {"/readyz", "GET, HEAD", &Service::readyz},
      {"/v1/stats", "GET, HEAD", &Service::stats},
      {"/dashboard", "GET, HEAD", &Service::dashboard},
      {"/", "GET, HEAD", &Service::index},
  };
  const std::string_view path = path_of(request.target);
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (path == r.path) route = &r;
  }
  // The metrics label is a route's path or a fixed word: a client cannot add labels.
  const std::string_view label = route != nullptr           ? route->path
                                 : path.starts_with("/v1/") ? "/v1/other"
                                                            : "other";
  const Reply reply{this, label, Clock::now(), std::move(respond)};
  if (route == nullptr) {
    return reply(error_response(404, "no such endpoint: " + std::string(path)));
  }
  if (!allows(route->allow, request.method)) {
    HttpResponse response =
        error_response(405, "method " + request.method + " is not allowed on " + std::string(path) +
                                " (allow: " + std::string(route->allow) + ")");
    response.headers.emplace_back("Allow", route->allow);
    return reply(std::move(response));
  }
  (this->*route->serve)(request, reply);
}

void Service::metrics_text(const HttpRequest&, const Reply& reply) {
  std::string text = metrics_.render();
  append_metric_family(text, "spillway_backend_status", MetricType::kGauge,
                       "The backend's state now (ready, unreachable, circuit_open).");
  append_metric_sample(text, "spillway_backend_status", {{"status", store_->status()}},
                       std::uint64_t{1});
  store_->append_metrics(text);
  {
    std::lock_guard lock(metrics_sources_mutex_);
    for (const auto& source : metrics_sources_) source(text);
  }
  reply({.body = std::move(text), .content_type = "text/plain; version=0.0.4"});
}

void Service::index(const HttpRequest&, const Reply& reply) {
  std::string body =
      "spillway " SPILLWAY_VERSION
      " - a rate limiter\n\n"
      "POST /v1/check     decide a request by the policy's layers (JSON attributes)\n"
      "POST /v1/limit     decide one key against a limit given in the request\n"
      "GET  /v1/auth      nginx auth_request: 204 admitted, 429/403 denied\n"
      "GET  /metrics      Prometheus metrics\n"
      "GET  /healthz      liveness\n"
      "GET  /readyz       readiness (503 while the backend is unreachable)\n";
  if (settings()->dashboard) {
    body.append(
        "GET  /v1/stats     live counters as JSON\n"
        "GET  /dashboard    the live dashboard\n");
  }
  reply({.body = std::move(body), .content_type = "text/plain; charset=utf-8"});
}

void Service::healthz(const HttpRequest&, const Reply& reply) {
  reply({.body = R"({"status":"ok"})"});
}

void Service::readyz(const HttpRequest&, const Reply& reply) {
  const bool ready = store_->ready();
  // on_error says what requests get meanwhile: with allow they are admitted unchecked.
  const std::string_view on_error = policy::on_error_name(settings()->on_error);
  std::string body = ready ? R"({"status":"ready","backend":")"
                           : R"({"status":"not ready","error":"backend unreachable","backend":")";
  body.append(store_->status()).append(R"(","on_error":")").append(on_error).append("\"}");
  reply({.status = ready ? 200 : 503, .body = std::move(body)});
}

void Service::stats(const HttpRequest&, const Reply& reply) {
  const std::shared_ptr<const Settings> current = settings();
  if (!current->dashboard) {
    return reply(error_response(404, "no such endpoint: /v1/stats (server.dashboard is off)"));
  }
  const Metrics::Snapshot snapshot = metrics_.snapshot();
  StatsView view{.metrics = &snapshot,
                 .top_denied = top_denied_.top(10),
                 .mask_keys = current->mask_keys,
                 .mask_salt = mask_salt_,
                 .backend_kind = current->backend_kind,
                 .backend_status = store_->status(),
                 .backend_up = store_->ready(),
                 .config_version = current->version,
                 .config_loaded_at = iso8601_utc(current->loaded_at),
                 .layers = {},
                 .uptime_s = std::chrono::duration<double>(Clock::now() - started_).count(),
                 .version = SPILLWAY_VERSION};
  for (const policy::LayerSpec& layer : current->policy->spec().layers) {
    view.layers.emplace_back(layer.name,
                             layer.mode == policy::LayerMode::kShadow ? "shadow" : "enforce");
  }
  HttpResponse response{.body = stats_json(view)};
  response.headers.emplace_back("Cache-Control", "no-store");
  reply(std::move(response));
}

void Service::dashboard(const HttpRequest&, const Reply& reply) {
  if (!settings()->dashboard) {
    return reply(error_response(404, "no such endpoint: /dashboard (server.dashboard is off)"));
  }
  HttpResponse response{.body = std::string(pages::dashboard_html()),
                        .content_type = "text/html; charset=utf-8"};
  // The page inlines everything and fetches only /v1/stats from here.
  response.headers.emplace_back("Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; "
                                "style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
  response.headers.emplace_back("Cache-Control", "no-store");
  reply(std::move(response));
}

void Service::backend_failed(const Error& error, bool allowed) {
  metrics_.backend_error(errc_name(error.code), allowed);
  std::string line = "spillway: backend error (";
  line.append(errc_name(error.code)).append("): ").append(error.message);
  line.append(allowed ? "; on_error allow: admitted without a decision"
                      : "; on_error deny: answered 503 (403 to nginx)");
  error_log_.write(std::move(line));  // one line a second at most
}

void Service::limit(const HttpRequest& request, const Reply& reply) {
  unsigned char buffer[2048];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(request.body, resource);
  if (!body) return reply(error_response(400, body.error().message));
  std::string key;
  std::optional<std::int64_t> limit_value, burst;
  std::optional<Micros> period;
  Algorithm algorithm = Algorithm::kGcra;
  std::int64_t cost = 1;
  for (const auto& [name, value] : *body) {
    if (name == "key") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      key = *v;
    } else if (name == "limit" || name == "burst" || name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      if (name == "limit") limit_value = *v;
      if (name == "burst") burst = *v;
      if (name == "cost") cost = *v;
    } else if (name == "period") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      auto parsed = parse_duration(*v);
      if (!parsed) return reply(error_response(400, "\"period\": " + parsed.error().message));
      period = *parsed;
    } else if (name == "algorithm") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      auto parsed = parse_algorithm(*v);
      if (!parsed) return reply(error_response(400, "\"algorithm\": " + parsed.error().message));
      algorithm = *parsed;
    } else {
      return reply(error_response(400, "unknown field \"" + std::string(name) + "\""));
    }
  }
  auto stored_key = policy::limit_endpoint_key(key);
  if (!stored_key) return reply(error_response(400, stored_key.error().message));
  if (!limit_value) return reply(error_response(400, "\"limit\" is required"));
  if (!period) return reply(error_response(400, "\"period\" is required"));
  if (cost < 0) return reply(error_response(400, "\"cost\" must be 0 or more"));
  auto made = Limit::make(algorithm, *limit_value, *period, burst);
  if (!made) return reply(error_response(400, made.error().message));
  const auto on_error = settings()->on_error;
  store_->check_async(
      *stored_key, *made, cost, std::nullopt,
      [this, limit = *made, on_error, key = *stored_key, reply](Result<Decision> decision) {
        reply(limit_response(limit, on_error, key, decision));
      });
}

HttpResponse Service::limit_response(const Limit& limit, policy::OnError on_error,
                                     const std::string& stored_key,
                                     const Result<Decision>& decision) {
  if (!decision) {
    if (decision.error().code == Errc::kInvalidArgument) {
      return error_response(400, decision.error().message);
    }
    // local: the store decided in-process already; an error that still comes is admitted.
    const bool allow = on_error != policy::OnError::kDeny;
    backend_failed(decision.error(), allow);
    return limit_backend_error_response(limit, allow, decision.error());
  }
  metrics_.decision("limit", decision->allowed);
  metrics_.outcome(decision->allowed);
  if (!decision->allowed) top_denied_.add(stored_key);
  return limit_decision_response(*decision, limit.period());
}

void Service::check(const HttpRequest& request, const Reply& reply) {
  unsigned char buffer[2048];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(request.body, resource);
  if (!body) return reply(error_response(400, body.error().message));
  const auto& current = settings();
  Attributes attributes;
  std::int64_t cost = 1;
  for (const auto& [name, value] : *body) {
    if (name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      if (*v < 0) return reply(error_response(400, "\"cost\" must be 0 or more"));
      cost = *v;
      continue;
    }
    if (current->reject_unknown_attributes && !uses_attribute(*current->policy, name)) {
      return reply(error_response(400, unknown_attribute_message(*current->policy, name)));
    }
    auto v = text(value, name);
    if (!v) return reply(error_response(400, v.error().message));
    attributes.insert_or_assign(std::string(name), std::move(*v));
  }
  if (auto ip = attributes.find("ip"); ip != attributes.end()) {
    auto normalized = normalize_ip(ip->second, current->ipv6_prefix);
    if (!normalized) return reply(error_response(400, normalized.error().message));
    ip->second = std::move(*normalized);
  }
  run_policy(current, attributes, cost, false, reply);
}

// A trusted proxy that sends a client-address header other than the one configured: every client
// behind it is keyed by the proxy's address (one budget for all). Said once a minute at most.
void Service::warn_of_unread_client_header(const HttpRequest& request, const Settings& settings,
                                           const policy::IpAddress& peer) {
  if (!policy::is_trusted_proxy(peer, settings.trusted_proxies)) return;
  for (std::string_view other : {"x-forwarded-for", "forwarded", "x-real-ip"}) {
    if (request.header(other) == nullptr) continue;
    proxy_log_.write("spillway: trusted proxy " + request.peer_address + " sent " +
                     std::string(other) + " but server.client_ip_header is " +
                     std::string(policy::client_ip_header_name(settings.client_ip_header)) +
                     ", which it did not send: its clients are limited as one (the proxy's "
                     "address); set server.client_ip_header: " +
                     std::string(other));
    return;
  }
}

void Service::auth(const HttpRequest& request, const Reply& reply) {
  const auto& current = settings();
  auto peer = policy::parse_ip(request.peer_address);
  if (!peer) return reply(error_response(400, "peer address: " + peer.error().message));
  const auto header = [&](std::string_view name) -> std::optional<std::string_view> {
    const std::string* value = request.header(name);
    return value ? std::optional<std::string_view>(*value) : std::nullopt;
  };
  // Only the header the trusted proxies set is read, every line of it.
  const std::vector<std::string_view> forwarded =
      request.header_values(policy::client_ip_header_name(current->client_ip_header));
  auto client =
      policy::client_address(*peer, current->client_ip_header, forwarded, current->trusted_proxies);
  if (!client) return reply(error_response(400, client.error().message));
  if (forwarded.empty()) warn_of_unread_client_header(request, *current, *peer);
  Attributes attributes{{"ip", policy::ip_key(*client, current->ipv6_prefix)}};
  if (auto key = header("x-api-key"); key && !key->empty()) {
    attributes["api_key"] = std::string(*key);
  }
  // The original request's path (raw: the policy makes it canonical) and method. A proxy sets
  // each once; a second line could only come from a client, and which one counts is ambiguous.
  for (std::string_view name : {"x-original-uri", "x-original-method"}) {
    if (const std::size_t lines = header_lines(request, name); lines > 1) {
      return reply(error_response(400, std::string(header_display_name(name)) +
                                           " must be sent once (it came " + std::to_string(lines) +
                                           " times)"));
    }
  }
  const std::vector<std::string>& routed = current->policy->route_attributes();
  if (auto uri = header("x-original-uri")) {
    attributes[policy::kEndpointAttribute] = std::string(*uri);
  } else if (std::find(routed.begin(), routed.end(), policy::kEndpointAttribute) != routed.end()) {
    // Without it the endpoint limits would be skipped in silence: a proxy set up without it
    // would never limit endpoints.
    return reply(error_response(
        400,
        "X-Original-URI is required: the policy limits endpoints (nginx: proxy_set_header "
        "X-Original-URI $request_uri;)"));
  }
  // An enforced endpoint layer on an attribute /v1/auth cannot fill would never apply here.
  for (const std::string& attribute : routed) {
    if (std::find(std::begin(kAuthAttributes), std::end(kAuthAttributes), attribute) ==
        std::end(kAuthAttributes)) {
      return reply(error_response(
          400, "the policy limits routes of attribute " + quote_for_error(attribute) +
                   ", which /v1/auth does not provide (it provides " + auth_attributes_text() +
                   "): use POST /v1/check, or by_endpoint.attribute: endpoint"));
    }
  }
  if (auto method = header("x-original-method"); method && !method->empty()) {
    attributes[policy::kMethodAttribute] = std::string(*method);
  }
  run_policy(current, attributes, 1, true, reply);
}

void Service::run_policy(const std::shared_ptr<const Settings>& settings,
                         const Attributes& attributes, std::int64_t cost, bool for_nginx,
                         const Reply& reply) {
  const Policy& policy = *settings->policy;
  // The lambda's copy of `settings` keeps the Policy alive until the store answers.
  policy.decide_async(*store_, attributes, cost, std::nullopt,
                      [this, settings, for_nginx, reply](Result<PolicyDecision> result) {
                        reply(policy_response(*settings, for_nginx, result));
                      });
}

HttpResponse Service::policy_response(const Settings& settings, bool for_nginx,
                                      const Result<PolicyDecision>& result) {
  if (!result) {
    if (result.error().code == Errc::kInvalidArgument) {
      // nginx passes 401 and 403 through; a missing API key is "unauthorized".
      const bool missing_key = result.error().field == "api_key";
      if (!for_nginx) return error_response(400, result.error().message);
      return error_response(missing_key ? 401 : 400, auth_attribute_message(result.error()));
    }
    const bool allow = settings.on_error != policy::OnError::kDeny;
    backend_failed(result.error(), allow);
    return policy_backend_error_response(allow, for_nginx, result.error());
  }
  for (const LayerDecision& l : result->layers) {
    metrics_.decision(l.name, l.decision.allowed, l.shadow);
  }
  metrics_.outcome(result->allowed);
  if (!result->allowed) top_denied_.add(result->denied_key);
  // A shadow layer's backend error changed nothing in the answer: counted and logged only.
  if (result->shadow_error) {
    const Error& error = *result->shadow_error;
    metrics_.backend_error(errc_name(error.code), true);
    std::string line = "spillway: backend error (";
    line.append(errc_name(error.code))
        .append(") in a shadow layer's check: ")
        .append(error.message);
    error_log_.write(line.append("; the answer did not depend on it"));
  }
  return policy_decision_response(*result, for_nginx);
}

}  // namespace spillway::server
