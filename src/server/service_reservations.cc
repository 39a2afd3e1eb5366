// Usage-based limits over HTTP (docs/SPEC.md §5.3): POST /v1/commit settles a reservation that
// POST /v1/check or /v1/limit made with "reserve": true, with the actual cost; POST /v1/cancel
// gives its whole estimate back. Concurrency limits (§5.6): POST /v1/release settles a ticket,
// giving back its slots and keeping the charges of its rate layers. Bad input is a 400 naming the
// field and changes nothing; an unknown or expired id is a 404, one already settled a 409.
#include <string>
#include <vector>

#include "src/core/text.h"
#include "src/server/decision_response.h"
#include "src/server/json_body.h"
#include "src/server/service.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

// The most layers a "costs" object may name (a policy has a handful).
constexpr std::size_t kMaxCosts = 64;

int status_of(Errc code) {
  switch (code) {
    case Errc::kInvalidArgument:
      return 400;
    case Errc::kNotFound:
      return 404;
    case Errc::kConflict:
      return 409;
    default:
      return 503;
  }
}

// The one text field of a body that takes only it (`field`), empty when absent; `endpoint` names
// the request in the error of any other field.
Result<std::string> only_field(const std::string& text_body, std::string_view field,
                               std::string_view endpoint) {
  unsigned char buffer[1024];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(text_body, resource);
  if (!body) return std::unexpected(body.error());
  std::string out;
  for (const auto& [name, value] : *body) {
    if (name != field) {
      return invalid_argument("unknown field " + quote_for_error(name, 64) + " (" +
                              std::string(endpoint) + " takes \"" + std::string(field) + "\")");
    }
    auto v = text(value, name);
    if (!v) return std::unexpected(v.error());
    out = std::move(*v);
  }
  return out;
}

}  // namespace

void Service::commit(const HttpRequest& request, const Reply& reply) {
  unsigned char buffer[2048];
  json::monotonic_resource resource(buffer, sizeof buffer);
  auto body = parse_object(request.body, resource);
  if (!body) return reply(error_response(400, body.error().message));
  std::string id;
  std::optional<std::int64_t> cost;
  std::vector<std::string> names;
  std::vector<std::int64_t> values;
  bool has_costs = false;
  for (const auto& [name, value] : *body) {
    if (name == "reservation") {
      auto v = text(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      id = std::move(*v);
    } else if (name == "cost") {
      auto v = whole_number(value, name);
      if (!v) return reply(error_response(400, v.error().message));
      cost = *v;
    } else if (name == "costs") {
      if (!value.is_object()) {
        return reply(error_response(400, "\"costs\" must be an object: layer name -> cost"));
      }
      has_costs = true;
      if (value.as_object().size() > kMaxCosts) {
        return reply(error_response(
            400, "\"costs\" names more than " + std::to_string(kMaxCosts) + " layers"));
      }
      for (const auto& [layer, layer_cost] : value.as_object()) {
        auto v = whole_number(layer_cost, "costs." + std::string(layer));
        if (!v) return reply(error_response(400, v.error().message));
        names.emplace_back(layer);
        values.push_back(*v);
      }
    } else {
      return reply(error_response(
          400, "unknown field " + quote_for_error(name, 64) +
                   " (POST /v1/commit takes \"reservation\", \"cost\" and \"costs\")"));
    }
  }
  if (!cost && !has_costs) {
    return reply(error_response(400, "\"cost\" or \"costs\" is required: the actual cost"));
  }
  if (!cost && names.empty()) {
    return reply(error_response(400, "\"costs\" names no layer: nothing would be settled"));
  }
  std::vector<LayerCost> costs;
  for (std::size_t i = 0; i < names.size(); ++i) costs.push_back({names[i], values[i]});
  settle(Settlement{.id = id, .cancel = false, .cost = cost, .costs = costs}, reply);
}

void Service::cancel(const HttpRequest& request, const Reply& reply) {
  Result<std::string> id = only_field(request.body, "reservation", "POST /v1/cancel");
  if (!id) return reply(error_response(400, id.error().message));
  settle(Settlement{.id = *id, .cancel = true}, reply);
}

void Service::release(const HttpRequest& request, const Reply& reply) {
  Result<std::string> body = only_field(request.body, "ticket", "POST /v1/release");
  if (!body) return reply(error_response(400, body.error().message));
  std::string id = std::move(*body);
  if (id.empty()) {
    return reply(error_response(400, "\"ticket\" is required: the ticket /v1/check answered"));
  }
  if (id.size() > kMaxReservationIdBytes) {
    return reply(error_response(400, "\"ticket\" is " + std::to_string(id.size()) +
                                         " bytes: a ticket is at most " +
                                         std::to_string(kMaxReservationIdBytes)));
  }
  // The slots come back; the rate layers keep their charge. Only a ticket is released.
  store_->settle(Settlement{.id = id, .release = true}, [this, id, reply](Result<Settled> settled) {
    if (!settled) {
      const Error& error = settled.error();
      const int status = status_of(error.code);
      if (status == 503) backend_failed(error, false);
      std::string message = error.message;
      if (status == 404) message = "no such ticket: never given, or its holds expired";
      if (status == 409) message = "the ticket was released already";
      return reply(error_response(status, message));
    }
    holds_settled(*settled);
    reply(released_response(id, *settled));
  });
}

void Service::holds_acquired(const policy::PolicyDecision& decision) {
  for (const policy::LayerDecision& layer : decision.layers) {
    if (layer.hold && !layer.shadow) metrics_.hold(layer.name, "acquired");
  }
}

void Service::holds_settled(const Settled& settled) {
  for (const SettledLayer& layer : settled) {
    if (layer.hold) metrics_.hold(layer.label, layer.refunded > 0 ? "released" : "expired");
  }
}

void Service::settle(const Settlement& settlement, const Reply& reply) {
  if (std::optional<Error> wrong = settlement_problem(settlement)) {
    return reply(error_response(400, wrong->message));
  }
  const bool cancel = settlement.cancel;
  store_->settle(settlement,
                 [this, id = std::string(settlement.id), cancel, reply](Result<Settled> settled) {
                   if (!settled) {
                     const int status = status_of(settled.error().code);
                     if (status == 503) backend_failed(settled.error(), false);
                     return reply(error_response(status, settled.error().message));
                   }
                   metrics_.reservation(cancel ? "cancelled" : "committed");
                   holds_settled(*settled);
                   for (const SettledLayer& layer : *settled) {
                     metrics_.settled_units(layer.label, layer.refunded, layer.charged);
                   }
                   reply(settled_response(id, cancel, *settled));
                 });
}

}  // namespace spillway::server
