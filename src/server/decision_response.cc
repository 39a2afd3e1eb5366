#include "src/server/decision_response.h"

#include "src/core/decimal.h"
#include "src/policy/rate_headers.h"
#include "src/server/json_text.h"

namespace spillway::server {
namespace {

using policy::LayerDecision;

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

// RateLimit-Policy / RateLimit (IETF httpapi draft: named policies with q, w; r, t) of the
// enforced layers, the X-RateLimit-* trio of the top-level decision, and Retry-After when denied.
// X-RateLimit-Limit is `top_capacity`, its limit's Limit::capacity(): what X-RateLimit-Remaining
// counts down from (a bucket's burst); q stays the rate's L per w.
void add_rate_headers(HttpResponse& response, const std::vector<LayerDecision>& layers,
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
void append_backend_error_fields(std::string& body, bool allow, const Error& error) {
  body.append(",\"backend_error\":");
  append_json_string(body, error.message);
  if (!allow) body.append(",\"error\":\"the rate limiter's backend failed\"");
}

}  // namespace

HttpResponse error_response(int status, std::string_view message) {
  return {.status = status, .body = error_body(message)};
}

HttpResponse limit_decision_response(const Decision& decision, const Limit& limit) {
  HttpResponse response{.status = decision.allowed ? 200 : 429, .body = decision_json(decision)};
  add_rate_headers(response, {{"limit", decision, limit.period()}}, decision, limit.capacity());
  return response;
}

HttpResponse limit_backend_error_response(const Limit& limit, bool allow, const Error& error) {
  std::string body = "{";
  append_decision_fields(body, Decision{.allowed = allow, .limit = limit.limit()});
  append_backend_error_fields(body, allow, error);
  body.push_back('}');
  HttpResponse response{.status = allow ? 200 : 503, .body = std::move(body)};
  add_backend_error_headers(response, allow, error);
  return response;
}

HttpResponse policy_decision_response(const policy::PolicyDecision& d, bool for_nginx) {
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
    if (d.shadow_checked) {
      body.append(",\"shadow_denied\":[");
      for (std::size_t i = 0; i < d.shadow_denied.size(); ++i) {
        if (i > 0) body.push_back(',');
        append_json_string(body, d.shadow_denied[i]);
      }
      body.push_back(']');
    }
    body.append(",\"layers\":[");
    for (std::size_t i = 0; i < d.layers.size(); ++i) {
      if (i > 0) body.push_back(',');
      body.push_back('{');
      append_decision_fields(body, d.layers[i].decision);
      body.append(",\"name\":");
      append_json_string(body, d.layers[i].name);
      if (d.layers[i].shadow) body.append(",\"mode\":\"shadow\"");
      if (!d.layers[i].plan.empty()) {
        body.append(",\"plan\":");
        append_json_string(body, d.layers[i].plan);
      }
      body.push_back('}');
    }
    body.append("]}");
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
  if (for_nginx && !d.shadow_denied.empty()) {
    std::string names;
    for (const std::string& name : d.shadow_denied) names.append(names.empty() ? "" : ",") += name;
    response.headers.emplace_back("X-Spillway-Shadow-Denied", std::move(names));
  }
  add_rate_headers(response, d.layers, top, d.top_capacity);
  return response;
}

HttpResponse policy_backend_error_response(bool allow, bool for_nginx, const Error& error) {
  std::string body = allow ? "{\"allowed\":true" : "{\"allowed\":false";
  append_backend_error_fields(body, allow, error);
  body.push_back('}');
  // nginx's auth_request understands 2xx and 401/403 only: a denial stays 403 there.
  HttpResponse response{.status = allow ? (for_nginx ? 204 : 200) : (for_nginx ? 403 : 503),
                        .body = std::move(body)};
  add_backend_error_headers(response, allow, error);
  return response;
}

HttpResponse reservation_refused_response(const Error& error) {
  std::string body = "{\"allowed\":false,\"backend_error\":";
  append_json_string(body, error.message);
  body.append(",\"error\":\"the store is full: no reservation was made, nothing was charged\"}");
  HttpResponse response{.status = 503, .body = std::move(body)};
  add_backend_error_headers(response, false, error);
  return response;
}

void add_reservation(HttpResponse& response, std::string_view id, std::chrono::milliseconds ttl) {
  std::string& body = response.body;
  if (body.empty() || body.back() != '}') return;  // not a JSON object (nginx's answers)
  body.pop_back();
  body.append(",\"reservation\":");
  append_json_string(body, id);
  body.append(",\"reservation_expires_ms\":");
  append_decimal(body, ttl.count());
  body.push_back('}');
}

HttpResponse settled_response(std::string_view id, bool cancel, const Settled& settled) {
  HttpResponse response;
  std::string& body = response.body;
  body.append("{\"reservation\":");
  append_json_string(body, id);
  body.append(cancel ? ",\"settled\":\"cancel\",\"layers\":["
                     : ",\"settled\":\"commit\",\"layers\":[");
  for (std::size_t i = 0; i < settled.size(); ++i) {
    const SettledLayer& l = settled[i];
    if (i > 0) body.push_back(',');
    body.append("{\"name\":");
    append_json_string(body, l.label);
    for (const auto& [name, value] :
         {std::pair{",\"estimate\":", l.estimate}, std::pair{",\"actual\":", l.actual},
          std::pair{",\"refunded\":", l.refunded}, std::pair{",\"charged\":", l.charged}}) {
      body.append(name);
      append_decimal(body, value);
    }
    body.push_back(',');
    append_decision_fields(body, l.after);
    body.push_back('}');
  }
  body.append("]}");
  return response;
}

}  // namespace spillway::server
