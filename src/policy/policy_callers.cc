// A caller named by one value, for the admin API and `spillway inspect` (spillway/policy_engine.h):
// the spelling a layer keys a value by (Policy::caller_value), the key a tenant record is stored
// under (Policy::tenant_key), and every (key, limit) a layer may keep for a caller
// (Policy::keys_of_caller: what a counter reset forgets), built as resolve() builds them.
// Errors are kInvalidArgument naming the layer or the form expected.
// Thread-safe (a Policy is immutable; the tenant directory is thread-safe).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/policy/keys.h"
#include "src/policy/layer_inputs.h"

namespace spillway::policy {

Result<std::string> Policy::caller_value(std::string_view attribute, std::string_view value,
                                         int ipv6_prefix) const {
  if (attribute == kIpAttribute) return ip_attribute_key(value, ipv6_prefix, true);
  if (is_path_attribute(attribute)) return path_attribute_key(value, attribute);
  return std::string(value);
}

Result<std::string> Policy::tenant_key(std::string_view value, int ipv6_prefix) const {
  std::optional<std::string> key;
  std::string key_layer, refusals;
  for (const LayerSpec& layer : spec_.layers) {
    if (!layer.by_plan || layer.by_plan->source != PlanSource::kStore) continue;
    auto spelt = caller_value(layer.by_plan->attribute, value, ipv6_prefix);
    if (!spelt) {
      refusals +=
          (refusals.empty() ? "" : "; ") + ("layer " + layer.name + ": ") + spelt.error().message;
      continue;
    }
    if (key && *key != *spelt) {
      return invalid_argument("layers " + key_layer + " and " + layer.name +
                              " look tenants up by different attributes that spell this key "
                              "differently: one record cannot serve both (give the key as one "
                              "of them spells it)");
    }
    key = std::move(*spelt);
    key_layer = layer.name;
  }
  if (key) return *key;
  if (!refusals.empty()) {
    return invalid_argument("the key can match no caller: " + refusals);
  }
  return std::string(value);  // no layer reads records: the record's check says so
}

Result<std::vector<Policy::Check>> Policy::keys_of_caller(std::string_view layer_name,
                                                          std::string_view raw_value,
                                                          int ipv6_prefix) const {
  auto at = std::find_if(spec_.layers.begin(), spec_.layers.end(),
                         [&](const LayerSpec& l) { return l.name == layer_name; });
  if (at == spec_.layers.end()) {
    std::string names;
    for (const LayerSpec& l : spec_.layers) names += (names.empty() ? "" : ", ") + l.name;
    return std::unexpected(Error{
        Errc::kInvalidArgument,
        "no layer is named " + quote_for_error(layer_name, 64) + " (" + names + ")", "layer"});
  }
  const std::size_t index = static_cast<std::size_t>(at - spec_.layers.begin());
  const LayerSpec& layer = *at;
  const BuiltLayer& built = built_[index];
  const std::string* route_attribute = layer.by_endpoint ? &layer.by_endpoint->attribute : nullptr;
  std::size_t callers = 0;
  for (const std::string& name : layer.key) {
    if (route_attribute != nullptr && name == *route_attribute) continue;
    ++callers;
  }
  if (callers != 1) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "layer " + layer.name + " is keyed by " + std::to_string(callers) +
                                     " caller attributes; its keys cannot be named from one value",
                                 "layer"});
  }
  const std::string* caller = nullptr;
  for (const std::string& name : layer.key) {
    if (route_attribute == nullptr || name != *route_attribute) caller = &name;
  }
  auto spelt = caller_value(*caller, raw_value, ipv6_prefix);
  if (!spelt) return std::unexpected(spelt.error());
  const std::string_view value = *spelt;
  // The key of one route (nullptr: a layer without routes), as resolve() builds it.
  const auto key_for = [&](const std::string* route) {
    std::string key = layer.name;
    for (const std::string& name : layer.key) {
      append_key_part(
          key, route != nullptr && name == *route_attribute ? std::string_view(*route) : value);
    }
    return key;
  };
  std::vector<Check> out;
  if (layer.by_endpoint) {
    for (std::size_t r = 0; r < built.route_names.size(); ++r) {
      out.push_back({index, key_for(&built.route_names[r]), &built.route_limits[r]});
    }
  } else if (layer.by_plan) {
    const std::string key = key_for(nullptr);
    for (const auto& [plan, limit] : built.by_plan) out.push_back({index, key, &limit, &plan});
    if (tenants_ != nullptr && layer.by_plan->source == PlanSource::kStore) {
      if (auto record = tenants_->find(value)) {
        if (std::shared_ptr<const Limit> custom = custom_limit(layer, *record)) {
          const Limit* raw = custom.get();
          out.push_back({index, key, raw, nullptr, std::move(custom)});
        }
      }
    }
  } else {
    out.push_back({index, key_for(nullptr), &*built.fixed});
  }
  // Two plans of one rate are one limit: each (key, limit) once.
  std::vector<Check> unique;
  for (Check& check : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Check& c) {
      return c.key == check.key && *c.limit == *check.limit;
    });
    if (!seen) unique.push_back(std::move(check));
  }
  out = std::move(unique);
  for (const Check& check : out) {
    if (Result<void> fits = check_layer_key(check.key, layer.name); !fits) {
      return std::unexpected(fits.error());
    }
  }
  return out;
}

}  // namespace spillway::policy
