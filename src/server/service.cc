#include "src/server/service.h"

#include <boost/json.hpp>
#include <chrono>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "src/core/decimal.h"
#include "src/server/json_text.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse error_response(int status, std::string_view message) {
  return {.status = status, .body = error_body(message)};
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

std::int64_t seconds_up(Micros d) { return d <= 0 ? 0 : ceil_to_unit(d, kMicrosPerSecond); }
std::int64_t millis_up(Micros d) { return d < 0 ? d : ceil_to_unit(d, kMicrosPerMilli); }

// `"allowed":true,"limit":10,"remaining":9,"retry_after_ms":0,"reset_after_ms":6000`
void append_decision_fields(std::string& out, const Decision& d) {
  out.append(d.allowed ? "\"allowed\":true,\"limit\":" : "\"allowed\":false,\"limit\":");
  append_decimal(out, d.limit);
  out.append(",\"remaining\":");
  append_decimal(out, d.remaining);
  out.append(",\"retry_after_ms\":");
  append_decimal(out, millis_up(d.retry_after));
  out.append(",\"reset_after_ms\":");
  append_decimal(out, millis_up(d.reset_after));
}

std::string decision_json(const Decision& d) {
  std::string out = "{";
  append_decision_fields(out, d);
  out.push_back('}');
  return out;
}

// RateLimit-Policy / RateLimit (IETF httpapi draft: named policies with q, w; r, t), the
// X-RateLimit-* trio of the top-level decision, and Retry-After when denied.
void add_rate_headers(HttpResponse& response, const std::vector<LayerDecision>& layers,
                      const Decision& top) {
  response.headers.reserve(6);
  if (!layers.empty()) {
    std::string policy, state;
    for (const LayerDecision& l : layers) {
      if (!policy.empty()) {
        policy.append(", ");
        state.append(", ");
      }
      policy.append("\"").append(l.name).append("\";q=");
      append_decimal(policy, l.decision.limit);
      policy.append(";w=");
      append_decimal(policy, seconds_up(l.period));
      state.append("\"").append(l.name).append("\";r=");
      append_decimal(state, l.decision.remaining);
      state.append(";t=");
      append_decimal(state, seconds_up(l.decision.reset_after));
    }
    response.headers.emplace_back("RateLimit-Policy", std::move(policy));
    response.headers.emplace_back("RateLimit", std::move(state));
  }
  response.headers.emplace_back("X-RateLimit-Limit", std::to_string(top.limit));
  response.headers.emplace_back("X-RateLimit-Remaining", std::to_string(top.remaining));
  response.headers.emplace_back("X-RateLimit-Reset", std::to_string(seconds_up(top.reset_after)));
  if (!top.allowed && top.retry_after > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(seconds_up(top.retry_after)));
  }
}

// Reads a JSON object body; the error names what is wrong. The value's memory comes from
// `resource` (a stack buffer for the usual small body), so it must not outlive it.
Result<json::object> parse_object(const std::string& body, json::monotonic_resource& resource) {
  boost::system::error_code ec;
  json::value value = json::parse(body, ec, json::storage_ptr(&resource));
  if (ec) return invalid_argument("body is not valid JSON: " + ec.message());
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

}  // namespace

Result<std::shared_ptr<const Service::Settings>> Service::build(const policy::Config& config) {
  auto built = Policy::make(config.policy);
  if (!built) return std::unexpected(built.error());
  auto settings = std::make_shared<Settings>();
  settings->policy = *built;
  settings->trusted_proxies = config.server.trusted_proxies;
  settings->ipv6_prefix = config.server.ipv6_prefix;
  settings->on_error = config.backend.on_error;
  return std::shared_ptr<const Settings>(std::move(settings));
}

namespace {
std::atomic<std::uint64_t> next_service_id{1};
}  // namespace

Service::Service(std::unique_ptr<Store> store)
    : store_(std::move(store)),
      synchronous_(dynamic_cast<const MemoryStore*>(store_.get()) != nullptr),
      id_(next_service_id.fetch_add(1, std::memory_order_relaxed)) {}

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
  settings_ = *settings;
  settings_version_.fetch_add(1, std::memory_order_release);
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
  static constexpr Route kRoutes[] = {
      {"/v1/check", "POST", &Service::check},    {"/v1/limit", "POST", &Service::limit},
      {"/v1/auth", "GET, HEAD", &Service::auth}, {"/metrics", "GET", &Service::metrics_text},
      {"/healthz", "GET", &Service::healthz},    {"/readyz", "GET", &Service::readyz},
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
  reply({.body = metrics_.render(), .content_type = "text/plain; version=0.0.4"});
}

void Service::healthz(const HttpRequest&, const Reply& reply) {
  reply({.body = R"({"status":"ok"})"});
}

void Service::readyz(const HttpRequest&, const Reply& reply) {
  const auto* redis = dynamic_cast<const RedisStore*>(store_.get());
  const bool ready = redis == nullptr || redis->connected();
  reply({.status = ready ? 200 : 503,
         .body = ready ? R"({"status":"ready"})"
                       : R"({"status":"not ready","error":"backend unreachable"})"});
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
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return reply(error_response(400, "\"key\" must be a string of 1 to 1024 bytes"));
  }
  if (!limit_value) return reply(error_response(400, "\"limit\" is required"));
  if (!period) return reply(error_response(400, "\"period\" is required"));
  if (cost < 0) return reply(error_response(400, "\"cost\" must be 0 or more"));
  auto made = Limit::make(algorithm, *limit_value, *period, burst);
  if (!made) return reply(error_response(400, made.error().message));
  const auto on_error = settings()->on_error;
  // "/v1/limit:" cannot begin a policy layer's key (layer names have no '/').
  const std::string store_key = "/v1/limit:" + key;
  if (synchronous_) {
    return reply(limit_response(*made, on_error, store_->check(store_key, *made, cost)));
  }
  store_->check_async(store_key, *made, cost, std::nullopt,
                      [this, limit = *made, on_error, reply](Result<Decision> decision) {
                        reply(limit_response(limit, on_error, decision));
                      });
}

HttpResponse Service::limit_response(const Limit& limit, policy::OnError on_error,
                                     const Result<Decision>& decision) {
  if (!decision) {
    if (decision.error().code == Errc::kInvalidArgument) {
      return error_response(400, decision.error().message);
    }
    metrics_.backend_error(errc_name(decision.error().code));
    const bool allow = on_error == policy::OnError::kAllow;
    std::string body = "{";
    append_decision_fields(body, Decision{.allowed = allow, .limit = limit.limit()});
    body.append(",\"backend_error\":");
    append_json_string(body, decision.error().message);
    body.push_back('}');
    HttpResponse response{.status = allow ? 200 : 429, .body = std::move(body)};
    if (!allow) response.headers.emplace_back("Retry-After", "1");
    return response;
  }
  metrics_.decision("limit", decision->allowed);
  HttpResponse response{.status = decision->allowed ? 200 : 429, .body = decision_json(*decision)};
  add_rate_headers(response, {{"limit", *decision, limit.period()}}, *decision);
  return response;
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

void Service::auth(const HttpRequest& request, const Reply& reply) {
  const auto& current = settings();
  auto peer = policy::parse_ip(request.peer_address);
  if (!peer) return reply(error_response(400, "peer address: " + peer.error().message));
  const auto header = [&](std::string_view name) -> std::optional<std::string_view> {
    const std::string* value = request.header(name);
    return value ? std::optional<std::string_view>(*value) : std::nullopt;
  };
  auto client = policy::client_address(*peer, header("x-forwarded-for"), header("x-real-ip"),
                                       current->trusted_proxies);
  if (!client) return reply(error_response(400, client.error().message));
  Attributes attributes{{"ip", policy::ip_key(*client, current->ipv6_prefix)}};
  if (auto key = header("x-api-key"); key && !key->empty()) {
    attributes["api_key"] = std::string(*key);
  }
  if (auto uri = header("x-original-uri")) attributes["endpoint"] = std::string(path_of(*uri));
  run_policy(current, attributes, 1, true, reply);
}

void Service::run_policy(const std::shared_ptr<const Settings>& settings,
                         const Attributes& attributes, std::int64_t cost, bool for_nginx,
                         const Reply& reply) {
  const Policy& policy = *settings->policy;
  if (synchronous_) {
    return reply(policy_response(*settings, for_nginx, policy.decide(*store_, attributes, cost)));
  }
  // The lambda's copy of `settings` keeps the Policy alive until the store answers.
  policy.decide_async(*store_, attributes, cost,
                      [this, settings, for_nginx, reply](Result<PolicyDecision> result) {
                        reply(policy_response(*settings, for_nginx, result));
                      });
}

HttpResponse Service::policy_response(const Settings& settings, bool for_nginx,
                                      const Result<PolicyDecision>& result) {
  if (!result) {
    if (result.error().code == Errc::kInvalidArgument) {
      // nginx passes 401 and 403 through; a missing API key is "unauthorized".
      const bool missing_key = result.error().message.find("\"api_key\"") != std::string::npos;
      return error_response(for_nginx && missing_key ? 401 : 400, result.error().message);
    }
    metrics_.backend_error(errc_name(result.error().code));
    const bool allow = settings.on_error == policy::OnError::kAllow;
    std::string body =
        allow ? "{\"allowed\":true,\"backend_error\":" : "{\"allowed\":false,\"backend_error\":";
    append_json_string(body, result.error().message);
    body.push_back('}');
    HttpResponse response{.status = allow ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 429),
                          .body = std::move(body)};
    if (!allow) response.headers.emplace_back("Retry-After", "1");
    return response;
  }
  const PolicyDecision& d = *result;
  for (const LayerDecision& l : d.layers) metrics_.decision(l.name, l.decision.allowed);
  Decision top = d.top;
  top.allowed = d.allowed;
  HttpResponse response;
  response.status = d.allowed ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 429);
  if (!for_nginx) {
    // {<top>,"denied_by":null|"name","layers":[{<layer>,"name":"edge"},...]}
    std::string& body = response.body;
    body.reserve(128 + 112 * d.layers.size());
    body.push_back('{');
    append_decision_fields(body, top);
    body.append(",\"denied_by\":");
    if (d.denied_by) {
      append_json_string(body, *d.denied_by);
    } else {
      body.append("null");
    }
    body.append(",\"layers\":[");
    for (std::size_t i = 0; i < d.layers.size(); ++i) {
      if (i > 0) body.push_back(',');
      body.push_back('{');
      append_decision_fields(body, d.layers[i].decision);
      body.append(",\"name\":");
      append_json_string(body, d.layers[i].name);
      body.push_back('}');
    }
    body.append("]}");
  }
  add_rate_headers(response, d.layers, top);
  return response;
}

}  // namespace spillway::server
