#include "src/server/service.h"

#include <boost/json.hpp>
#include <chrono>

#include "spillway/redis_store.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

std::string error_body(std::string_view message) {
  return json::serialize(json::object{{"error", message}});
}

HttpResponse error_response(int status, std::string_view message) {
  return {.status = status, .body = error_body(message)};
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

std::int64_t seconds_up(Micros d) { return d <= 0 ? 0 : ceil_to_unit(d, kMicrosPerSecond); }
std::int64_t millis_up(Micros d) { return d < 0 ? d : ceil_to_unit(d, kMicrosPerMilli); }

json::object decision_json(const Decision& d) {
  return {{"allowed", d.allowed},
          {"limit", d.limit},
          {"remaining", d.remaining},
          {"retry_after_ms", millis_up(d.retry_after)},
          {"reset_after_ms", millis_up(d.reset_after)}};
}

// RateLimit-Policy / RateLimit (IETF httpapi draft: named policies with q, w; r, t), the
// X-RateLimit-* trio of the top-level decision, and Retry-After when denied.
void add_rate_headers(HttpResponse& response, const std::vector<LayerDecision>& layers,
                      const Decision& top) {
  std::string policy, state;
  for (const LayerDecision& l : layers) {
    if (!policy.empty()) {
      policy += ", ";
      state += ", ";
    }
    policy += "\"" + l.name + "\";q=" + std::to_string(l.decision.limit) +
              ";w=" + std::to_string(seconds_up(l.period));
    state += "\"" + l.name + "\";r=" + std::to_string(l.decision.remaining) +
             ";t=" + std::to_string(seconds_up(l.decision.reset_after));
  }
  if (!layers.empty()) {
    response.headers.emplace_back("RateLimit-Policy", policy);
    response.headers.emplace_back("RateLimit", state);
  }
  response.headers.emplace_back("X-RateLimit-Limit", std::to_string(top.limit));
  response.headers.emplace_back("X-RateLimit-Remaining", std::to_string(top.remaining));
  response.headers.emplace_back("X-RateLimit-Reset", std::to_string(seconds_up(top.reset_after)));
  if (!top.allowed && top.retry_after > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(seconds_up(top.retry_after)));
  }
}

// Reads a JSON object body; the error names what is wrong.
Result<json::object> parse_object(const std::string& body) {
  boost::system::error_code ec;
  json::value value = json::parse(body, ec);
  if (ec) return invalid_argument("body is not valid JSON: " + ec.message());
  if (!value.is_object()) return invalid_argument("body must be a JSON object");
  return std::move(value.as_object());
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
  return {};
}

std::shared_ptr<const Service::Settings> Service::settings() const {
  std::lock_guard lock(settings_mutex_);
  return settings_;
}

void Service::handle(HttpRequest request, Responder respond) {
  const auto started = Clock::now();
  const std::string path(path_of(request.target));
  // Every answer is counted on its way out, whichever thread sends it.
  Responder counted = [this, started, path, respond = std::move(respond)](HttpResponse response) {
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    metrics_.request(
        path.starts_with("/v1/") || path == "/metrics" || path == "/healthz" || path == "/readyz"
            ? path
            : "other",
        response.status, elapsed.count());
    respond(std::move(response));
  };
  const auto only = [&](std::initializer_list<std::string_view> methods) {
    for (std::string_view m : methods) {
      if (request.method == m) return true;
    }
    std::string allow;
    for (std::string_view m : methods) allow += (allow.empty() ? "" : ", ") + std::string(m);
    HttpResponse response = error_response(
        405, "method " + request.method + " is not allowed on " + path + " (allow: " + allow + ")");
    response.headers.emplace_back("Allow", allow);
    counted(std::move(response));
    return false;
  };

  if (path == "/v1/limit") {
    if (only({"POST"})) limit(request, std::move(counted));
  } else if (path == "/v1/check") {
    if (only({"POST"})) check(request, std::move(counted));
  } else if (path == "/v1/auth") {
    if (only({"GET", "HEAD"})) auth(request, std::move(counted));
  } else if (path == "/metrics") {
    if (only({"GET"})) {
      counted({.body = metrics_.render(), .content_type = "text/plain; version=0.0.4"});
    }
  } else if (path == "/healthz") {
    if (only({"GET"})) counted({.body = R"({"status":"ok"})"});
  } else if (path == "/readyz") {
    if (only({"GET"})) {
      const auto* redis = dynamic_cast<const RedisStore*>(store_.get());
      const bool ready = redis == nullptr || redis->connected();
      counted({.status = ready ? 200 : 503,
               .body = ready ? R"({"status":"ready"})"
                             : R"({"status":"not ready","error":"backend unreachable"})"});
    }
  } else {
    counted(error_response(404, "no such endpoint: " + path));
  }
}

void Service::limit(const HttpRequest& request, Responder respond) {
  auto body = parse_object(request.body);
  if (!body) return respond(error_response(400, body.error().message));
  std::string key;
  std::optional<std::int64_t> limit_value, burst;
  std::optional<Micros> period;
  Algorithm algorithm = Algorithm::kGcra;
  std::int64_t cost = 1;
  for (const auto& [name, value] : *body) {
    if (name == "key") {
      auto v = text(value, name);
      if (!v) return respond(error_response(400, v.error().message));
      key = *v;
    } else if (name == "limit" || name == "burst" || name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return respond(error_response(400, v.error().message));
      if (name == "limit") limit_value = *v;
      if (name == "burst") burst = *v;
      if (name == "cost") cost = *v;
    } else if (name == "period") {
      auto v = text(value, name);
      if (!v) return respond(error_response(400, v.error().message));
      auto parsed = parse_duration(*v);
      if (!parsed) return respond(error_response(400, "\"period\": " + parsed.error().message));
      period = *parsed;
    } else if (name == "algorithm") {
      auto v = text(value, name);
      if (!v) return respond(error_response(400, v.error().message));
      auto parsed = parse_algorithm(*v);
      if (!parsed) return respond(error_response(400, "\"algorithm\": " + parsed.error().message));
      algorithm = *parsed;
    } else {
      return respond(error_response(400, "unknown field \"" + std::string(name) + "\""));
    }
  }
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return respond(error_response(400, "\"key\" must be a string of 1 to 1024 bytes"));
  }
  if (!limit_value) return respond(error_response(400, "\"limit\" is required"));
  if (!period) return respond(error_response(400, "\"period\" is required"));
  if (cost < 0) return respond(error_response(400, "\"cost\" must be 0 or more"));
  auto made = Limit::make(algorithm, *limit_value, *period, burst);
  if (!made) return respond(error_response(400, made.error().message));
  auto limit = std::make_shared<Limit>(*made);
  const auto on_error = settings()->on_error;
  // "/v1/limit:" cannot begin a policy layer's key (layer names have no '/').
  store_->check_async(
      "/v1/limit:" + key, *limit, cost, std::nullopt,
      [this, limit, on_error, respond = std::move(respond)](Result<Decision> decision) {
        if (!decision) {
          if (decision.error().code == Errc::kInvalidArgument) {
            return respond(error_response(400, decision.error().message));
          }
          metrics_.backend_error(std::string(errc_name(decision.error().code)));
          const bool allow = on_error == policy::OnError::kAllow;
          json::object answer = decision_json(Decision{.allowed = allow, .limit = limit->limit()});
          answer["backend_error"] = decision.error().message;
          HttpResponse response{.status = allow ? 200 : 429, .body = json::serialize(answer)};
          if (!allow) response.headers.emplace_back("Retry-After", "1");
          return respond(std::move(response));
        }
        metrics_.decision("limit", decision->allowed);
        HttpResponse response{.status = decision->allowed ? 200 : 429,
                              .body = json::serialize(decision_json(*decision))};
        add_rate_headers(response, {{"limit", *decision, limit->period()}}, *decision);
        respond(std::move(response));
      });
}

void Service::check(const HttpRequest& request, Responder respond) {
  auto body = parse_object(request.body);
  if (!body) return respond(error_response(400, body.error().message));
  auto current = settings();
  Attributes attributes;
  std::int64_t cost = 1;
  for (const auto& [name, value] : *body) {
    if (name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return respond(error_response(400, v.error().message));
      if (*v < 0) return respond(error_response(400, "\"cost\" must be 0 or more"));
      cost = *v;
      continue;
    }
    auto v = text(value, name);
    if (!v) return respond(error_response(400, v.error().message));
    attributes[std::string(name)] = *v;
  }
  if (auto ip = attributes.find("ip"); ip != attributes.end()) {
    auto normalized = normalize_ip(ip->second, current->ipv6_prefix);
    if (!normalized) return respond(error_response(400, normalized.error().message));
    ip->second = *normalized;
  }
  run_policy(std::move(current), std::move(attributes), cost, false, std::move(respond));
}

void Service::auth(const HttpRequest& request, Responder respond) {
  auto current = settings();
  auto peer = policy::parse_ip(request.peer_address);
  if (!peer) return respond(error_response(400, "peer address: " + peer.error().message));
  const auto header = [&](std::string_view name) -> std::optional<std::string_view> {
    const std::string* value = request.header(name);
    return value ? std::optional<std::string_view>(*value) : std::nullopt;
  };
  auto client = policy::client_address(*peer, header("x-forwarded-for"), header("x-real-ip"),
                                       current->trusted_proxies);
  if (!client) return respond(error_response(400, client.error().message));
  Attributes attributes{{"ip", policy::ip_key(*client, current->ipv6_prefix)}};
  if (auto key = header("x-api-key"); key && !key->empty()) {
    attributes["api_key"] = std::string(*key);
  }
  if (auto uri = header("x-original-uri")) attributes["endpoint"] = std::string(path_of(*uri));
  run_policy(std::move(current), std::move(attributes), 1, true, std::move(respond));
}

void Service::run_policy(std::shared_ptr<const Settings> settings, Attributes attributes,
                         std::int64_t cost, bool for_nginx, Responder respond) {
  const Policy& policy = *settings->policy;
  policy.decide_async(
      *store_, attributes, cost,
      [this, settings, for_nginx, respond = std::move(respond)](Result<PolicyDecision> result) {
        if (!result) {
          if (result.error().code == Errc::kInvalidArgument) {
            // nginx passes 401 and 403 through; a missing API key is "unauthorized".
            const bool missing_key =
                result.error().message.find("\"api_key\"") != std::string::npos;
            return respond(
                error_response(for_nginx && missing_key ? 401 : 400, result.error().message));
          }
          metrics_.backend_error(std::string(errc_name(result.error().code)));
          const bool allow = settings->on_error == policy::OnError::kAllow;
          HttpResponse response{
              .status = allow ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 429),
              .body = json::serialize(
                  json::object{{"allowed", allow}, {"backend_error", result.error().message}})};
          if (!allow) response.headers.emplace_back("Retry-After", "1");
          return respond(std::move(response));
        }
        const PolicyDecision& d = *result;
        json::array layers;
        for (const LayerDecision& l : d.layers) {
          metrics_.decision(l.name, l.decision.allowed);
          json::object layer = decision_json(l.decision);
          layer.emplace("name", l.name);
          layers.push_back(std::move(layer));
        }
        json::object body = decision_json(d.top);
        body["allowed"] = d.allowed;
        body["denied_by"] = d.denied_by ? json::value(*d.denied_by) : json::value(nullptr);
        body["layers"] = std::move(layers);
        HttpResponse response;
        response.status = d.allowed ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 429);
        if (!for_nginx) response.body = json::serialize(body);
        Decision top = d.top;
        top.allowed = d.allowed;
        add_rate_headers(response, d.layers, top);
        respond(std::move(response));
      });
}

}  // namespace spillway::server
