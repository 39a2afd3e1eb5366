#include "src/server/decision_response.h"

#include "src/core/decimal.h"
#include "src/core/json_writer.h"
#include "src/policy/rate_headers.h"
#include "src/server/response_text.h"

namespace spillway::server {
namespace {

using policy::LayerDecision;

std::int64_t millis_up(Micros d) { return d < 0 ? d : ceil_to_unit(d, kMicrosPerMilli); }

// `"allowed":true,"limit":10,"remaining":9,"retry_after_ms":0,"reset_after_ms":6000`, members of
// the object `json` has open; and `"delay_ms":200` when admitted after a delay (shaping: the
// caller proceeds once it has passed, rounded up to a ms so that it never goes early).
void decision_members(JsonWriter& json, const Decision& d) {
  json.member("allowed", d.allowed)
      .member("limit", d.limit)
      .member("remaining", d.remaining)
      .member("retry_after_ms", millis_up(d.retry_after))
      .member("reset_after_ms", millis_up(d.reset_after));
  if (d.allowed && d.delay > 0) json.member("delay_ms", millis_up(d.delay));
}

std::string decision_json(const Decision& d) {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  decision_members(json, d);
  json.end_object();
  return out;
}

// RateLimit-Policy / RateLimit (IETF httpapi draft: named policies with q, w; r, t) of the
// enforced layers, the X-RateLimit-* trio of the top-level decision, and Retry-After when denied.
// X-RateLimit-Limit is `top_capacity`, its limit's Limit::capacity(): what X-RateLimit-Remaining
// counts down from (a bucket's burst); q stays the rate's L per w.
void add_decision_headers(HttpResponse& response, const std::vector<LayerDecision>& layers,
                          const Decision& top, std::int64_t top_capacity) {
  response.headers.reserve(6);
  if (!layers.empty() && !layers.front().shadow) {
    std::string policy, state;  // sized once: "\"<name>\";q=<limit>;w=<seconds>" per layer
    policy.reserve(32 * layers.size());
    state.reserve(32 * layers.size());
    for (const LayerDecision& l : layers) {
      if (l.shadow) break;  // shadow layers come last, and are not the client's limits
      if (!policy.empty()) {
        policy.append(", ");
        state.append(", ");
      }
      policy.append("\"").append(l.name).append("\";q=");
      append_decimal(policy, l.decision.limit);
      policy.append(";w=");
      append_decimal(policy, policy::header_seconds(l.period));
      state.append("\"").append(l.name).append("\";r=");
      append_decimal(state, l.decision.remaining);
      state.append(";t=");
      append_decimal(state, policy::header_seconds(l.decision.reset_after));
    }
    response.headers.emplace_back("RateLimit-Policy", std::move(policy));
    response.headers.emplace_back("RateLimit", std::move(state));
  }
  policy::add_rate_headers(
      policy::RateHeaderNames::kXRateLimit, top_capacity, top.remaining, top.reset_after,
      !top.allowed && top.retry_after > 0 ? std::optional<Micros>(top.retry_after) : std::nullopt,
      [&](std::string_view name, std::string value) {
        response.headers.emplace_back(name, std::move(value));
      });
}

// What every backend-error answer carries: `X-Spillway-Backend-Error: <kind>`, and when denied
// `Retry-After: 1` (the backend may be back by then).
void add_backend_error_headers(HttpResponse& response, bool allow, const Error& error) {
  response.headers.emplace_back("X-Spillway-Backend-Error", std::string(errc_name(error.code)));
  if (!allow) response.headers.emplace_back("Retry-After", "1");
}

// Denied because of the backend, not because of the limit: 503 (429 would tell the client it is
// over its limit), with "error" as every 5xx body has.
void backend_error_members(JsonWriter& json, bool allow, const Error& error) {
  json.member("backend_error", error.message);
  if (!allow) json.member("error", "the rate limiter's backend failed");
}

}  // namespace

HttpResponse error_response(int status, std::string_view message) {
  return {.status = status, .body = error_body(message)};
}

HttpResponse limit_decision_response(const Decision& decision, const Limit& limit) {
  HttpResponse response{.status = decision.allowed ? 200 : 429, .body = decision_json(decision)};
  add_decision_headers(response, {{"limit", decision, limit.period()}}, decision, limit.capacity());
  return response;
}

HttpResponse limit_backend_error_response(const Limit& limit, bool allow, const Error& error) {
  std::string body;
  JsonWriter json(body);
  json.begin_object();
  decision_members(json, Decision{.allowed = allow, .limit = limit.limit()});
  backend_error_members(json, allow, error);
  json.end_object();
  HttpResponse response{.status = allow ? 200 : 503, .body = std::move(body)};
  add_backend_error_headers(response, allow, error);
  return response;
}

HttpResponse policy_decision_response(const policy::PolicyDecision& d, bool for_nginx) {
  Decision top = d.top;
  top.allowed = d.allowed;
  top.delay = d.delay;  // the request's: its longest layer's
  HttpResponse response;
  response.status = d.allowed ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 429);
  if (!for_nginx) {
    // {<top>,"denied_by":null|"name","layers":[{<layer>,"name":"edge"},...]}
    response.body.reserve(128 + 112 * d.layers.size());
    JsonWriter json(response.body);
    json.begin_object();
    decision_members(json, top);
    if (d.denied_by) {
      json.member("denied_by", *d.denied_by);
    } else {
      json.null_member("denied_by");
    }
    // Load shedding (docs/SPEC.md §2.4): denied within the share kept from its priority.
    if (d.shed) json.member("shed", true);
    if (!d.priority.empty()) json.member("priority", d.priority);
    if (d.shadow_checked) {
      json.key("shadow_denied").begin_array();
      for (const std::string& name : d.shadow_denied) json.value(name);
      json.end_array();
    }
    json.key("layers").begin_array();
    for (const LayerDecision& layer : d.layers) {
      json.begin_object();
      decision_members(json, layer.decision);
      json.member("name", layer.name);
      if (layer.shadow) json.member("mode", "shadow");
      if (!layer.plan.empty()) json.member("plan", layer.plan);
      json.end_object();
    }
    json.end_array().end_object();
  } else {
    response.content_type = {};  // nginx's answers carry no body, so no type either
  }
  if (for_nginx) {
    // The plan of the first enforced by_plan layer, for the application behind the proxy
    // (nginx: auth_request_set $plan $upstream_http_x_spillway_plan).
    for (const policy::LayerDecision& layer : d.layers) {
      if (layer.shadow || layer.plan.empty()) continue;
      response.headers.emplace_back("X-Spillway-Plan", layer.plan);
      break;
    }
  }
  if (d.shed) response.headers.emplace_back(kShedHeader, "1");
  if (for_nginx && d.allowed && d.delay > 0) {
    // Held for this long before it was sent (Service::hold): for nginx's logs.
    response.headers.emplace_back(kDelayHeader, std::to_string(millis_up(d.delay)));
  }
  if (for_nginx && !d.shadow_denied.empty()) {
    std::string names;
    for (const std::string& name : d.shadow_denied) names.append(names.empty() ? "" : ",") += name;
    response.headers.emplace_back("X-Spillway-Shadow-Denied", std::move(names));
  }
  add_decision_headers(response, d.layers, top, d.top_capacity);
  return response;
}

HttpResponse policy_backend_error_response(bool allow, bool for_nginx, const Error& error) {
  std::string body;
  JsonWriter json(body);
  json.begin_object().member("allowed", allow);
  backend_error_members(json, allow, error);
  json.end_object();
  // nginx's auth_request understands 2xx and 401/403 only: a denial stays 403 there.
  HttpResponse response{.status = allow ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 503),
                        .body = std::move(body)};
  add_backend_error_headers(response, allow, error);
  return response;
}

HttpResponse held_answers_full_response(Micros delay) {
  HttpResponse response{.status = 403};
  response.content_type = {};  // as nginx's other answers: no body, no type
  response.headers.emplace_back("X-Spillway-Denied-By", "server.max_delayed");
  response.headers.emplace_back("Retry-After",
                                std::to_string(ceil_to_unit(delay, kMicrosPerSecond)));
  return response;
}

void mark_released_early(HttpResponse& response) {
  response.headers.emplace_back("X-Spillway-Released", "shutdown");
}

HttpResponse reservation_refused_response(const Error& error) {
  std::string body;
  JsonWriter(body)
      .begin_object()
      .member("allowed", false)
      .member("backend_error", error.message)
      .member("error", "the store is full: no reservation was made, nothing was charged")
      .end_object();
  HttpResponse response{.status = 503, .body = std::move(body)};
  add_backend_error_headers(response, false, error);
  return response;
}

void add_reservation(HttpResponse& response, std::string_view id, std::chrono::milliseconds ttl) {
  std::string& body = response.body;
  if (body.empty() || body.back() != '}') return;  // not a JSON object (nginx's answers)
  body.pop_back();
  JsonWriter::in_object(body, body.size() > 1)
      .member("reservation", id)
      .member("reservation_expires_ms", ttl.count())
      .end_object();
}

void add_ticket(HttpResponse& response, std::string_view id, Micros expires) {
  std::string& body = response.body;
  if (body.empty() || body.back() != '}') return;  // not a JSON object
  body.pop_back();
  JsonWriter::in_object(body, body.size() > 1)
      .member("ticket", id)
      .member("ticket_expires_ms", expires / 1000)
      .end_object();
}

HttpResponse settled_response(std::string_view id, bool cancel, const Settled& settled) {
  HttpResponse response;
  JsonWriter json(response.body);
  json.begin_object()
      .member("reservation", id)
      .member("settled", cancel ? "cancel" : "commit")
      .key("layers")
      .begin_array();
  for (const SettledLayer& l : settled) {
    json.begin_object()
        .member("name", l.label)
        .member("estimate", l.estimate)
        .member("actual", l.actual)
        .member("refunded", l.refunded)
        .member("charged", l.charged);
    decision_members(json, l.after);
    json.end_object();
  }
  json.end_array().end_object();
  return response;
}

HttpResponse released_response(std::string_view id, const Settled& settled) {
  HttpResponse response;
  JsonWriter json(response.body);
  json.begin_object().member("ticket", id).key("layers").begin_array();
  for (const SettledLayer& l : settled) {
    json.begin_object().member("name", l.label).member("released", l.refunded);
    decision_members(json, l.after);
    json.end_object();
  }
  json.end_array().end_object();
  return response;
}

}  // namespace spillway::server
