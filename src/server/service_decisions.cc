// The decision endpoints of the Service: POST /v1/check (JSON attributes), GET /v1/auth (nginx
// auth_request: attributes from headers and the client address) and POST /v1/limit (one key, a
// limit given in the request); the policy's or the store's answer turned into a response, and
// backend errors answered as on_error says.
#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/config/error_answer.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/policy/keys.h"
#include "src/policy/plan.h"
#include "src/server/decision_log_fields.h"
#include "src/server/decision_response.h"
#include "src/server/json_body.h"
#include "src/server/service.h"

namespace spillway::server {
namespace json = boost::json;
using policy::Attributes;
using policy::LayerDecision;
using policy::Policy;
using policy::PolicyDecision;
namespace {

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
  return message.append(
      " (and \"cost\", \"reserve\"); server.unknown_attributes: ignore accepts others");
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
std::string auth_attribute_message(const Error& error, const policy::Policy& policy) {
  if (policy.spec().priority && error.field == policy.spec().priority->attribute) {
    return "X-Spillway-Priority: " + error.message;
  }
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

void Service::backend_failed(const Error& error, bool allowed) {
  metrics_.backend_error(errc_name(error.code), allowed);
  std::string line = "spillway: backend error (";
  line.append(errc_name(error.code)).append("): ").append(error.message);
  line.append(allowed ? "; on_error allow: admitted without a decision"
              : error.field == policy::kTenantsNotLoaded
                  ? "; answered 503 (403 to nginx)"
                  : "; on_error deny: answered 503 (403 to nginx)");
  error_log_.write(std::move(line));  // one line a second at most
}

std::optional<HttpResponse> Service::reservation_refused(const Error& error) {
  if (error.code != Errc::kStoreFull) return std::nullopt;
  metrics_.backend_error(errc_name(error.code), false);
  error_log_.write("spillway: a reserve was refused (" + std::string(errc_name(error.code)) +
                   "): " + error.message + "; answered 503, nothing charged");
  return reservation_refused_response(error);
}

void Service::limit(const HttpRequest& request, const Reply& reply) {
  unsigned char buffer[2048];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(request.body, resource);
  if (!body) return reply(error_response(400, body.error().message));
  std::string key;
  std::optional<std::int64_t> limit_value, burst;
  std::optional<Micros> period;
  Micros max_delay = 0;
  Algorithm algorithm = Algorithm::kGcra;
  std::int64_t cost = 1;
  bool reserve = false;
  bool concurrency = false;  // "algorithm": "concurrency": "limit" in flight, each "hold_ttl"
  std::optional<Micros> hold_ttl;
  std::optional<LeaseSpec> lease;
  for (const auto& [name, value] : *body) {
    if (name == "sync") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      if (*v == "lease") {
        lease = LeaseSpec{};
      } else if (*v != "exact") {
        return reply(error_response(400, "\"sync\" must be \"exact\" or \"lease\""));
      }
    } else if (name == "reserve") {
      if (!value.is_bool()) return reply(error_response(400, "\"reserve\" must be true or false"));
      reserve = value.as_bool();
    } else if (name == "key") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      key = *v;
    } else if (name == "limit" || name == "burst" || name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      if (name == "limit") limit_value = *v;
      if (name == "burst") burst = *v;
      if (name == "cost") cost = *v;
    } else if (name == "period" || name == "max_delay" || name == "hold_ttl") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      auto parsed = parse_duration(*v);
      if (!parsed) {
        return reply(
            error_response(400, "\"" + std::string(name) + "\": " + parsed.error().message));
      }
      if (name == "period") period = *parsed;
      if (name == "max_delay") max_delay = *parsed;
      if (name == "hold_ttl") hold_ttl = *parsed;
    } else if (name == "algorithm") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      concurrency = *v == "concurrency";
      if (concurrency) continue;
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
  if (cost < 0) return reply(error_response(400, "\"cost\" must be 0 or more"));
  if (concurrency) {
    // A concurrency limit: no period, burst, delay or lease; one slot per request (a peek, cost
    // 0, holds none); admitted, a ticket to release.
    for (auto [given, field] :
         {std::pair{period.has_value(), "period"}, std::pair{burst.has_value(), "burst"},
          std::pair{max_delay > 0, "max_delay"}, std::pair{lease.has_value(), "sync"}}) {
      if (given) {
        return reply(error_response(400, "\"" + std::string(field) +
                                             "\" does not apply to a concurrency limit (\"limit\" "
                                             "in flight, each held until released or hold_ttl)"));
      }
    }
    if (cost > 1) {
      return reply(error_response(400,
                                  "\"cost\" of a concurrency limit is 1 (a request holds one "
                                  "slot) or 0 (a peek), got " +
                                      std::to_string(cost)));
    }
  } else {
    if (hold_ttl) {
      return reply(error_response(400,
                                  "\"hold_ttl\" applies only to \"algorithm\": "
                                  "\"concurrency\""));
    }
    if (!period) return reply(error_response(400, "\"period\" is required"));
  }
  auto made = concurrency ? Limit::concurrency(*limit_value, hold_ttl.value_or(kMicrosPerMinute))
                          : Limit::make(algorithm, *limit_value, *period, burst, max_delay);
  if (!made) return reply(error_response(400, made.error().message));
  const auto on_error = settings()->on_error;
  if (lease && reserve) {
    return reply(error_response(400, "\"sync\": \"lease\" cannot be used with \"reserve\""));
  }
  if (lease && max_delay > 0) {
    return reply(error_response(400, "\"max_delay\": " + std::string(lease_refuses_delay())));
  }
  // One item: a check, or a reservation of this one key labelled "limit" (a hold when it is a
  // concurrency limit: its ticket when it takes a slot; a peek's, which no commit may charge).
  static constexpr ReservedLayer kLayer[] = {{.label = "limit", .metered = false}};
  static constexpr ReservedLayer kHold[] = {{.label = "limit", .metered = false, .hold = true}};
  const bool holds = concurrency && cost > 0;
  struct Owned {
    Limit limit;
    std::string key;
    std::optional<LeaseSpec> lease;
    std::string id;
    ReserveSpec reserve;
    policy::Plan plan;
  };
  auto owned = std::make_shared<Owned>(Owned{.limit = *made, .key = *stored_key, .lease = lease});
  owned->plan.cost = cost;
  owned->plan.items.push_back({.key = owned->key,
                               .limit = &owned->limit,
                               .lease = owned->lease ? &*owned->lease : nullptr});
  std::chrono::milliseconds ttl = settings()->reservation_ttl;
  if (holds) {
    const auto hold = std::chrono::milliseconds(made->period() / 1000);
    ttl = reserve ? std::max(ttl, hold) : hold;
  }
  if (reserve || holds) {
    owned->id = new_reservation_id();
    owned->reserve =
        ReserveSpec{.id = owned->id, .ttl = ttl, .layers = concurrency ? kHold : kLayer};
    owned->plan.reserve = &owned->reserve;
  }
  std::shared_ptr<const policy::Plan> plan(owned, &owned->plan);
  policy::execute(
      *store_, std::move(plan),
      [this, owned, on_error, ttl, reserve, holds, reply](Result<policy::Outcome> outcome) {
        if (!outcome && owned->plan.reserve != nullptr) {
          if (auto refused = reservation_refused(outcome.error())) {
            return reply(std::move(*refused));
          }
        }
        Result<Decision> decision = outcome ? Result<Decision>(*outcome->items.front().decision)
                                            : Result<Decision>(std::unexpected(outcome.error()));
        HttpResponse response = limit_response(owned->limit, on_error, owned->key, decision);
        if (reserve && decision && decision->allowed) {
          metrics_.reservation("reserved");
          add_reservation(response, owned->id, ttl);
        }
        if (holds && decision && decision->allowed) {
          metrics_.hold("limit", "acquired");
          add_ticket(response, owned->id, owned->limit.period());
        }
        reply(std::move(response));
      });
}

HttpResponse Service::limit_response(const Limit& limit, policy::OnError on_error,
                                     const std::string& stored_key,
                                     const Result<Decision>& decision) {
  if (!decision) {
    const policy::ErrorAnswer answer = policy::answer_error(decision.error(), on_error);
    if (answer == policy::ErrorAnswer::kInvalid) {
      return error_response(400, decision.error().message);
    }
    const bool allow = answer == policy::ErrorAnswer::kAllow;
    backend_failed(decision.error(), allow);
    return limit_backend_error_response(limit, allow, decision.error());
  }
  metrics_.decision("limit", decision->allowed);
  metrics_.outcome(decision->allowed);
  if (!decision->allowed) top_denied_.add(stored_key);
  return limit_decision_response(*decision, limit);
}

void Service::check(const HttpRequest& request, const Reply& reply) {
  unsigned char buffer[2048];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(request.body, resource);
  if (!body) return reply(error_response(400, body.error().message));
  const auto& current = settings();
  Attributes attributes;
  std::int64_t cost = 1;
  bool reserve = false;
  for (const auto& [name, value] : *body) {
    if (name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      if (*v < 0) return reply(error_response(400, "\"cost\" must be 0 or more"));
      cost = *v;
      continue;
    }
    if (name == "reserve") {
      if (!value.is_bool()) return reply(error_response(400, "\"reserve\" must be true or false"));
      reserve = value.as_bool();
      continue;
    }
    if (current->reject_unknown_attributes && !uses_attribute(*current->policy, name)) {
      return reply(error_response(400, unknown_attribute_message(*current->policy, name)));
    }
    // A layer's cost attribute may be a JSON number ("tokens": 1200) or a string ("1200").
    const std::vector<std::string>& costs = current->policy->cost_attributes();
    if ((value.is_int64() || value.is_uint64() || value.is_double()) &&
        std::binary_search(costs.begin(), costs.end(), name)) {
      auto n = whole_number(value, name);
      if (!n) return reply(error_response(400, n.error().message));
      attributes.insert_or_assign(std::string(name), std::to_string(*n));
      continue;
    }
    auto v = text(value, name);
    if (!v) return reply(error_response(400, v.error().message));
    attributes.insert_or_assign(std::string(name), std::move(*v));
  }
  if (auto ip = attributes.find(policy::kIpAttribute); ip != attributes.end()) {
    // The one spelling the admin API and inspect use too (src/policy/caller_value.h).
    auto normalized = policy::ip_attribute_key(ip->second, current->ipv6_prefix);
    if (!normalized) return reply(error_response(400, normalized.error().message));
    ip->second = std::move(*normalized);
  }
  run_policy(current, attributes, cost, false, reply, reserve);
}

// The first client-address header a request carries, as a log line names it. From a trusted
// proxy whose configured header is absent: every client behind it is keyed by the proxy's
// address (one budget for all), said once a minute at most. From a peer that is no trusted proxy:
// not believed, the request is keyed by the peer; counted, and said once per peer.
void Service::note_unread_client_headers(const HttpRequest& request, const Settings& settings,
                                         bool trusted_peer) {
  static constexpr std::pair<std::string_view, std::string_view> kHeaders[] = {
      {"x-forwarded-for", "X-Forwarded-For"},
      {"forwarded", "Forwarded"},
      {"x-real-ip", "X-Real-IP"}};
  for (const auto& [lower, shown] : kHeaders) {
    if (request.header(lower) == nullptr) continue;
    if (!trusted_peer) return untrusted_forwarders_.saw(request.peer_address, shown);
    proxy_log_.write("spillway: trusted proxy " + request.peer_address + " sent " +
                     std::string(lower) + " but server.client_ip_header is " +
                     std::string(policy::client_ip_header_name(settings.client_ip_header)) +
                     ", which it did not send: its clients are limited as one (the proxy's "
                     "address); set server.client_ip_header: " +
                     std::string(lower));
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
  const bool trusted_peer = policy::is_trusted_proxy(*peer, current->trusted_proxies);
  if (!trusted_peer || forwarded.empty()) {
    note_unread_client_headers(request, *current, trusted_peer);
  }
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
  // X-Spillway-Priority: the trusted proxy's classification of the request (nginx sets it on
  // every request, so that a client's own header is replaced), once; from any other peer, or
  // absent or empty, the policy's default level. Read only when the policy has priorities.
  if (const auto& priority = current->policy->spec().priority; priority && trusted_peer) {
    if (const std::size_t lines = header_lines(request, "x-spillway-priority"); lines > 1) {
      return reply(error_response(400, "X-Spillway-Priority must be sent once (it came " +
                                           std::to_string(lines) + " times)"));
    }
    if (auto level = header("x-spillway-priority"); level && !level->empty()) {
      attributes[priority->attribute] = std::string(*level);
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
                         const Reply& reply, bool reserve) {
  const Policy& policy = *settings->policy;
  // The lambda's copy of `settings` keeps the Policy alive until the store answers.
  if (!reserve) {
    // nginx's auth_request has no release step: a concurrency layer is refused there.
    return policy.decide_async(
        *store_, attributes, cost, std::nullopt,
        [this, settings, for_nginx, reply](Result<PolicyDecision> result) {
          // A ticket the store could not keep is never granted (as a reserve's, below).
          if (!result && settings->policy->has_concurrency()) {
            if (auto refused = reservation_refused(result.error())) {
              return reply(std::move(*refused));
            }
          }
          HttpResponse response = policy_response(*settings, for_nginx, result);
          if (result && result->hold_expires > 0) {
            holds_acquired(*result);
            add_ticket(response, result->reservation, result->hold_expires);
          }
          // nginx lets the request through when it has the answer.
          if (for_nginx && result && result->allowed && result->delay > 0) {
            return hold(std::move(response), result->delay, reply);
          }
          reply(std::move(response));
        },
        /*holds_allowed=*/!for_nginx);
  }
  policy.reserve_async(*store_, attributes, cost, std::nullopt, settings->reservation_ttl,
                       [this, settings, reply](Result<PolicyDecision> result) {
                         if (!result) {
                           if (auto refused = reservation_refused(result.error())) {
                             return reply(std::move(*refused));
                           }
                         }
                         HttpResponse response = policy_response(*settings, false, result);
                         if (result && !result->reservation.empty()) {
                           metrics_.reservation("reserved");
                           add_reservation(response, result->reservation, result->reservation_ttl);
                         }
                         if (result && result->hold_expires > 0) {
                           holds_acquired(*result);
                           add_ticket(response, result->reservation, result->hold_expires);
                         }
                         reply(std::move(response));
                       });
}

HttpResponse Service::policy_response(const Settings& settings, bool for_nginx,
                                      const Result<PolicyDecision>& result) {
  if (!result) {
    const policy::ErrorAnswer answer = policy::answer_error(result.error(), settings.on_error);
    if (answer == policy::ErrorAnswer::kInvalid) {
      // A concurrency layer on /v1/auth: the set-up is wrong, not the request.
      if (result.error().field == policy::kHoldsRefused) {
        return error_response(500, result.error().message +
                                       "; ask POST /v1/check and POST /v1/release from the "
                                       "application");
      }
      // nginx passes 401 and 403 through; a missing API key is "unauthorized".
      const bool missing_key = result.error().field == "api_key";
      if (!for_nginx) return error_response(400, result.error().message);
      return error_response(missing_key ? 401 : 400,
                            auth_attribute_message(result.error(), *settings.policy));
    }
    const bool allow = answer == policy::ErrorAnswer::kAllow;
    backend_failed(result.error(), allow);
    HttpResponse response = policy_backend_error_response(allow, for_nginx, result.error());
    if (log_json_) response.log_fields = backend_error_log_fields(result.error(), allow);
    return response;
  }
  for (const LayerDecision& l : result->layers) {
    metrics_.decision(l.name, l.decision.allowed, l.shadow);
  }
  metrics_.outcome(result->allowed);
  if (result->shed) metrics_.shed(*result->denied_by, result->priority);
  if (!result->allowed) {
    std::string_view plan;  // the denying layer's plan, for the dashboard
    for (const LayerDecision& l : result->layers) {
      if (result->denied_by && l.name == *result->denied_by) plan = l.plan;
    }
    top_denied_.add(result->denied_key, plan);
  }
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
  HttpResponse response = policy_decision_response(*result, for_nginx);
  if (log_json_) response.log_fields = decision_log_fields(*result);
  return response;
}

void Service::hold(HttpResponse response, Micros delay, const Reply& reply) {
  auto held = std::make_shared<HttpResponse>(std::move(response));
  const auto released_early = [this](HttpResponse& answer) {
    // Shutdown: the request was admitted and charged; it goes now rather than never.
    metrics_.delayed("released_early");
    mark_released_early(answer);
  };
  const int status = held->status;
  switch (held_.hold(delay, [held, reply, released_early](bool early) {
    if (early) released_early(*held);
    reply.send(std::move(*held));
  })) {
    case HeldReplies::Held::kHeld:
      // The decision's latency: the hold is counted apart (spillway_delayed_*).
      reply.count(status);
      return metrics_.delayed("held");
    case HeldReplies::Held::kReleased:
      released_early(*held);
      return reply(std::move(*held));
    case HeldReplies::Held::kFull:
      break;
  }
  // server.max_delayed answers are held already: denied, for nginx (its charge stays: the
  // limiter errs towards less traffic, never more).
  metrics_.delayed("refused");
  reply(held_answers_full_response(delay));
}

std::size_t Service::release_held() { return held_.release_all(); }

}  // namespace spillway::server
