#include "src/server/inspection.h"

#include <boost/json.hpp>

#include "spillway/limit.h"
#include "src/core/json_writer.h"
#include "src/core/text.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

std::unexpected<Error> malformed(std::string_view what) {
  return std::unexpected(Error{Errc::kInvalidArgument, "not an inspection: " + std::string(what)});
}

// The string member `name` of `object`, or nullopt when it is absent or null; an error when it
// is something else.
Result<std::optional<std::string>> optional_text(const json::object& object,
                                                 std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (!value->is_string()) return malformed(std::string(name) + " is not a string");
  return std::optional<std::string>(std::string(value->as_string()));
}

Result<std::string> required_text(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || !value->is_string()) {
    return malformed(std::string(name) + " is not a string");
  }
  return std::string(value->as_string());
}

Result<bool> required_bool(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || !value->is_bool()) {
    return malformed(std::string(name) + " is not true or false");
  }
  return value->as_bool();
}

Result<std::int64_t> required_number(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value != nullptr && value->is_int64()) return value->as_int64();
  if (value != nullptr && value->is_uint64() &&
      value->as_uint64() <= static_cast<std::uint64_t>(kMaxExact)) {
    return static_cast<std::int64_t>(value->as_uint64());
  }
  return malformed(std::string(name) + " is not a whole number");
}

Result<InspectedLayer> layer_of(const json::value& value) {
  if (!value.is_object()) return malformed("a layer is not an object");
  const json::object& object = value.as_object();
  InspectedLayer layer;
  auto name = required_text(object, "name");
  if (!name) return std::unexpected(name.error());
  layer.name = std::move(*name);
  auto shadow = required_bool(object, "shadow");
  if (!shadow) return std::unexpected(shadow.error());
  layer.shadow = *shadow;
  auto plan = optional_text(object, "plan");
  if (!plan) return std::unexpected(plan.error());
  layer.plan = std::move(*plan);
  auto limit = required_text(object, "limit");
  if (!limit) return std::unexpected(limit.error());
  layer.limit = std::move(*limit);
  auto blocked = required_bool(object, "blocked");
  if (!blocked) return std::unexpected(blocked.error());
  layer.blocked = *blocked;
  auto key = required_text(object, "key");
  if (!key) return std::unexpected(key.error());
  layer.key = std::move(*key);
  auto redis_key = optional_text(object, "redis_key");
  if (!redis_key) return std::unexpected(redis_key.error());
  layer.redis_key = std::move(*redis_key);
  auto error = optional_text(object, "error");
  if (!error) return std::unexpected(error.error());
  layer.error = std::move(*error);
  const json::value* now = object.if_contains("now");
  if (now == nullptr) return malformed("now is missing");
  if (now->is_object()) {
    Decision state;
    state.allowed = true;
    auto remaining = required_number(now->as_object(), "remaining");
    if (!remaining) return std::unexpected(remaining.error());
    auto limit_now = required_number(now->as_object(), "limit");
    if (!limit_now) return std::unexpected(limit_now.error());
    auto reset = required_number(now->as_object(), "reset_after_us");
    if (!reset) return std::unexpected(reset.error());
    state.remaining = *remaining;
    state.limit = *limit_now;
    state.reset_after = *reset;
    layer.now = state;
  } else if (!now->is_null()) {
    return malformed("now is neither an object nor null");
  }
  return layer;
}

}  // namespace

std::vector<InspectedLayer> inspect_layers(const policy::Policy& policy,
                                           std::span<const policy::Policy::Check> checks,
                                           Store* store, const StoredName& stored_name) {
  std::vector<InspectedLayer> layers;
  layers.reserve(checks.size());
  for (const policy::Policy::Check& check : checks) {
    const policy::LayerSpec& spec = policy.spec().layers[check.layer];
    InspectedLayer layer{.name = spec.name,
                         .shadow = spec.mode == policy::LayerMode::kShadow,
                         .limit = check.limit->describe(),
                         .blocked = check.blocked,
                         .key = check.key};
    if (check.plan != nullptr) layer.plan = *check.plan;
    if (stored_name) layer.redis_key = stored_name(check.key, *check.limit);
    if (store != nullptr) {
      // Cost 0, the layer's own cost attribute set aside: a peek, which charges nothing.
      const KeyedLimit keyed{.key = check.key, .limit = check.limit, .cost = 0};
      Result<StoreRequest> request = StoreRequest::make(std::span(&keyed, 1), 0);
      Result<Decisions> answer = request ? store->decide_and_wait(*request)
                                         : Result<Decisions>(std::unexpected(request.error()));
      if (answer && answer->size() == 1) {
        layer.now = answer->front();
      } else {
        layer.error = answer ? "the store gave no answer for this key" : answer.error().message;
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

std::string inspection_json(const Inspection& inspection) {
  std::string out;
  JsonWriter json(out);
  json.begin_object().member("backend", utf8_or_escaped(inspection.backend));
  if (inspection.key_names) json.member("key_names", utf8_or_escaped(*inspection.key_names));
  json.member("plans_from_config", inspection.plans_from_config).key("layers").begin_array();
  for (const InspectedLayer& layer : inspection.layers) {
    json.begin_object().member("name", utf8_or_escaped(layer.name)).member("shadow", layer.shadow);
    if (layer.plan) {
      json.member("plan", utf8_or_escaped(*layer.plan));
    } else {
      json.null_member("plan");
    }
    json.member("limit", utf8_or_escaped(layer.limit))
        .member("blocked", layer.blocked)
        .member("key", utf8_or_escaped(layer.key));
    if (layer.redis_key) json.member("redis_key", utf8_or_escaped(*layer.redis_key));
    if (layer.now) {
      json.key("now")
          .begin_object()
          .member("remaining", layer.now->remaining)
          .member("limit", layer.now->limit)
          .member("reset_after_us", layer.now->reset_after)
          .end_object();
    } else {
      json.null_member("now");
    }
    if (layer.error) json.member("error", utf8_or_escaped(*layer.error));
    json.end_object();
  }
  json.end_array().end_object();
  return out;
}

Result<Inspection> parse_inspection(std::string_view text) {
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec) return malformed("not JSON");
  if (!value.is_object()) return malformed("not a JSON object");
  const json::object& object = value.as_object();
  Inspection inspection;
  auto backend = required_text(object, "backend");
  if (!backend) return std::unexpected(backend.error());
  inspection.backend = std::move(*backend);
  auto key_names = optional_text(object, "key_names");
  if (!key_names) return std::unexpected(key_names.error());
  inspection.key_names = std::move(*key_names);
  auto from_config = required_bool(object, "plans_from_config");
  if (!from_config) return std::unexpected(from_config.error());
  inspection.plans_from_config = *from_config;
  const json::value* layers = object.if_contains("layers");
  if (layers == nullptr || !layers->is_array()) return malformed("layers is not an array");
  for (const json::value& entry : layers->as_array()) {
    auto layer = layer_of(entry);
    if (!layer) return std::unexpected(layer.error());
    inspection.layers.push_back(std::move(*layer));
  }
  return inspection;
}

}  // namespace spillway::server
