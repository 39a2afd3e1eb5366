// Policy::resolve (spillway/policy_engine.h): a request's attributes to the checks it makes, one
// per layer that applies. For each layer: the Limit (its fixed limit; the plan its by_plan
// attribute is assigned, or a tenant record's plan, own rate or block; the route its path
// matches), the key "<layer>:<len>:<value>…" (a path attribute canonical, an endpoint layer's
// route as written), and the cost (its cost attribute's value, or the request's). A shadow layer
// whose attributes are missing or malformed does not apply; an enforced one is an error naming
// the attribute. Tenant records are read from the directory's copy in the process: no I/O.
// Thread-safe (a Policy is immutable; the directory is thread-safe).
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/policy/endpoint_path.h"
#include "src/policy/keys.h"
#include "src/policy/layer_inputs.h"
#include "src/policy/routes.h"

namespace spillway::policy {
namespace {

// A layer's cost attribute's value: a whole number 0..2^52, digits only.
Result<std::int64_t> cost_value(const std::string& text, const std::string& attribute,
                                const std::string& layer) {
  std::int64_t value = 0;
  const auto [end, failed] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.front() == '-' || failed != std::errc() ||
      end != text.data() + text.size() || value > kMaxExact) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "attribute \"" + attribute + "\" (the cost of layer " + layer +
                                     ") must be a whole number from 0 to 2^52, got " +
                                     quote_for_error(text, 40),
                                 attribute});
  }
  return value;
}

}  // namespace

// "endpoint" always (it is the request's path, whatever reads it), and the attribute of every
// enforced endpoint layer; never chosen by a shadow layer, whose arrival must not change how
// enforced layers key or refuse a request.
bool Policy::is_path_attribute(std::string_view name) const {
  return name == kEndpointAttribute || std::find(route_attributes_.begin(), route_attributes_.end(),
                                                 name) != route_attributes_.end();
}

// The route a request matches in an endpoint layer: none when its path attribute is absent or no
// route matches; an error when the path or the method is malformed, or the method is missing
// while routes name methods.
Result<std::optional<std::size_t>> Policy::match_route(const LayerSpec& layer,
                                                       const BuiltLayer& built,
                                                       const Attributes& attributes) const {
  const std::string* value = find_attribute(attributes, layer.by_endpoint->attribute);
  if (value == nullptr) return std::nullopt;
  auto path = canonical_path(*value, !built.routes->case_sensitive());
  if (!path) return std::unexpected(with_field(path.error(), layer.by_endpoint->attribute));
  std::string method;
  if (built.routes->uses_methods()) {
    const std::string* given = find_attribute(attributes, kMethodAttribute);
    if (given == nullptr || given->empty()) {
      if (!built.routes->method_matters(*path)) return built.routes->match(*path, "");
      return std::unexpected(Error{
          Errc::kInvalidArgument,
          std::string("attribute \"") + kMethodAttribute + "\" is required (layer " + layer.name +
              " has a route for one method that matches " + quote_for_error(*path, 200) + ")",
          kMethodAttribute});
    }
    auto canonical = canonical_method(*given);
    if (!canonical) return std::unexpected(with_field(canonical.error(), kMethodAttribute));
    method = std::move(*canonical);
  }
  return built.routes->match(*path, method);
}

// The request's priority level: its priority attribute's value, or the default when it gives none;
// an unknown value is an error naming the attribute (a typo must not quietly pick a level).
Result<std::size_t> Policy::priority_level(const Attributes& attributes) const {
  const PrioritySpec& p = *spec_.priority;
  const std::string* value = find_attribute(attributes, p.attribute);
  const std::string& level = value == nullptr || value->empty() ? p.default_level : *value;
  const auto at = std::find(p.levels.begin(), p.levels.end(), level);
  if (at == p.levels.end()) {
    std::string known;
    for (const std::string& l : p.levels) known += (known.empty() ? "" : ", ") + l;
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "attribute \"" + p.attribute + "\" must be one of " + known +
                                     ", got " + quote_for_error(level, 40),
                                 p.attribute});
  }
  return static_cast<std::size_t>(at - p.levels.begin());
}

Result<std::vector<Policy::Check>> Policy::resolve(const Attributes& attributes) const {
  std::vector<Check> checks;
  checks.reserve(spec_.layers.size());
  std::size_t level = 0;
  if (spec_.priority) {
    Result<std::size_t> found = priority_level(attributes);
    if (!found) return std::unexpected(found.error());
    level = *found;
  }
  const std::string* priority = spec_.priority ? &spec_.priority->levels[level] : nullptr;
  for (std::size_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& layer = spec_.layers[i];
    const BuiltLayer& built = built_[i];
    const Limit* limit = built.fixed ? &*built.fixed : nullptr;
    const std::string* plan_name = nullptr;
    std::shared_ptr<const Limit> custom;  // a tenant's own rate for this layer
    bool blocked = false;                 // a tenant record blocks the caller
    // A shadow layer must never turn a request away: when its attributes are missing or make
    // too long a key, it does not apply (as an unlisted endpoint does not).
    const bool shadow = layer.mode == LayerMode::kShadow;
    if (layer.by_plan) {
      const std::string* value = find_attribute(attributes, layer.by_plan->attribute);
      if (value == nullptr || value->empty()) {
        if (shadow) continue;
        return missing_attribute(layer.by_plan->attribute, layer.name);
      }
      std::string canonical;  // a path attribute's value, as layers key it
      if (is_path_attribute(layer.by_plan->attribute)) {
        auto path = path_attribute_key(*value, layer.by_plan->attribute);
        if (!path) {
          if (shadow) continue;
          return std::unexpected(path.error());
        }
        canonical = std::move(*path);
        value = &canonical;
      }
      auto assigned = layer.by_plan->assignments.find(*value);
      const std::string& plan = assigned == layer.by_plan->assignments.end()
                                    ? layer.by_plan->default_plan
                                    : assigned->second;
      limit = &built.by_plan.find(plan)->second;
      plan_name = &plan;
      if (layer.by_plan->source == PlanSource::kStore && tenants_ != nullptr && !shadow &&
          until_loaded_ == UntilLoaded::kDeny && !tenants_->ready()) {
        // A copy never loaded cannot tell a blocked caller from another (docs/SPEC.md §5.2).
        return std::unexpected(Error{Errc::kUnavailable,
                                     "tenant records are not loaded yet (layer " + layer.name +
                                         " has source: store; tenants.until_loaded: deny)",
                                     kTenantsNotLoaded});
      }
      if (layer.by_plan->source == PlanSource::kStore && tenants_ != nullptr) {
        if (std::shared_ptr<const TenantRecord> record = tenants_->find(*value)) {
          if (record->blocked && !shadow) {
            blocked = true;
          } else if ((custom = custom_limit(layer, *record))) {
            limit = custom.get();
            static const std::string kCustom = kCustomPlan;
            plan_name = &kCustom;
          }
          if (!custom && !record->plan.empty()) {
            // A plan this layer does not have leaves the file's choice in force.
            if (auto known = built.by_plan.find(record->plan); known != built.by_plan.end()) {
              limit = &known->second;
              plan_name = &known->first;
            }
          }
        }
      }
    }
    const std::string* route = nullptr;  // by_endpoint: the route matched, as written
    if (layer.by_endpoint) {
      auto matched = match_route(layer, built, attributes);
      if (!matched) {
        if (shadow) continue;
        return std::unexpected(matched.error());
      }
      if (!*matched) continue;  // no route matches: the layer passes
      route = &built.route_names[**matched];
      limit = &built.route_limits[**matched];
    }
    std::string key;
    key.reserve(layer.name.size() + 32);
    key.append(layer.name);
    bool complete = true;
    for (const std::string& name : layer.key) {
      if (route != nullptr && name == layer.by_endpoint->attribute) {
        append_key_part(key, *route);  // one budget per route, whatever path matched it
        continue;
      }
      const std::string* value = find_attribute(attributes, name);
      if (value == nullptr || value->empty()) {
        if (!shadow) return missing_attribute(name, layer.name);
        complete = false;
        break;
      }
      if (is_path_attribute(name)) {
        // A path that another layer keys by: its canonical form, so spellings share a key.
        auto path = canonical_path(*value, true);
        if (!path) {
          if (!shadow) return std::unexpected(with_field(path.error(), name));
          complete = false;
          break;
        }
        append_key_part(key, *path);
        continue;
      }
      append_key_part(key, *value);
    }
    if (!complete) continue;
    if (Result<void> fits = check_layer_key(key, layer.name); !fits) {
      if (shadow) continue;
      return std::unexpected(fits.error());
    }
    // A concurrency layer holds one slot per request, whatever the request's cost.
    std::int64_t cost = layer.is_concurrency() ? 1 : kRequestCost;
    if (!layer.cost.empty()) {
      const std::string* value = find_attribute(attributes, layer.cost);
      if (value == nullptr || value->empty()) {
        if (shadow) continue;
        return missing_attribute(layer.cost, layer.name);
      }
      Result<std::int64_t> parsed = cost_value(*value, layer.cost, layer.name);
      if (!parsed) {
        if (shadow) continue;
        return std::unexpected(parsed.error());
      }
      cost = *parsed;
    }
    // The request's priority's view of the limit, when the layer keeps a share from it: built
    // once (Policy::make), or for a tenant's own rate here.
    std::shared_ptr<const Limit> view;
    if (!built.kept_permille.empty() && built.kept_permille[level] > 0 && !blocked) {
      if (auto known = built.views.find(limit); known != built.views.end()) {
        limit = &known->second[level];
      } else {
        // (A tenant's rate small enough that the share is all of it leaves the level nothing:
        // its requests are shed, never an error of the caller's.)
        const std::int64_t kept = kept_units(limit->capacity(), built.kept_permille[level]);
        Result<Limit> made = limit->with_reserved(kept);
        if (!made) return std::unexpected(made.error());
        view = std::make_shared<const Limit>(std::move(*made));
        limit = view.get();
      }
    }
    checks.push_back({i, std::move(key), limit, plan_name, std::move(custom), blocked, cost,
                      layer.lease ? &*layer.lease : nullptr, priority, std::move(view)});
  }
  return checks;
}

}  // namespace spillway::policy
