// Policy::make (spillway/policy_engine.h): a PolicySpec checked and built once. Every layer's
// name, key attributes, cost attribute, lease and selector (exactly one of limit, by_plan,
// by_endpoint) are checked; every Limit (a fixed limit, each plan's, each route's) and each
// endpoint layer's route table are built here, so a request only looks them up. Also the sorted
// lists of the attributes layers read (attributes_used, route_attributes, cost_attributes).
// Errors are kInvalidArgument naming the layer. Pure; the Policy made is immutable.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/policy/names.h"
#include "src/policy/routes.h"

namespace spillway::policy {
namespace {

Result<Limit> build_limit(const LayerSpec& layer, const RateSpec& rate, const std::string& what) {
  Result<Limit> limit =
      layer.is_concurrency()
          ? Limit::concurrency(rate.limit, *layer.hold_ttl)
          : Limit::make(layer.algorithm, rate.limit, rate.period, rate.burst, layer.max_delay);
  if (!limit) {
    return invalid_argument("layer \"" + layer.name + "\" " + what + ": " + limit.error().message);
  }
  return limit;
}

// The priority attribute names a value of its own: not an attribute a layer keys, routes, plans or
// costs by, nor one /v1/auth fills from its own headers (X-Spillway-Priority would overwrite it).
std::optional<Error> priority_attribute_problem(const PolicySpec& spec) {
  const std::string& name = spec.priority->attribute;
  bool taken =
      name == "ip" || name == "api_key" || name == kEndpointAttribute || name == kMethodAttribute;
  for (const LayerSpec& layer : spec.layers) {
    taken = taken || std::find(layer.key.begin(), layer.key.end(), name) != layer.key.end() ||
            layer.cost == name || (layer.by_plan && layer.by_plan->attribute == name) ||
            (layer.by_endpoint && layer.by_endpoint->attribute == name);
  }
  if (!taken) return std::nullopt;
  return Error{Errc::kInvalidArgument,
               "priority attribute \"" + name +
                   "\" is an attribute the policy or /v1/auth already uses for something else",
               "priority.attribute"};
}

}  // namespace

std::optional<Error> concurrency_layer_problem(const LayerSpec& layer) {
  if (!layer.is_concurrency()) return std::nullopt;
  const std::string where = "layer \"" + layer.name + "\" (algorithm: concurrency) ";
  auto refuse = [&](std::string field, std::string why) {
    return Error{Errc::kInvalidArgument, where + why, std::move(field)};
  };
  if (layer.by_plan || layer.by_endpoint) {
    return refuse(layer.by_plan ? "by_plan" : "by_endpoint",
                  "takes one fixed limit: the requests in flight per key, such as limit: 20");
  }
  if (layer.mode == LayerMode::kShadow) {
    return refuse("mode", "cannot be a shadow: a shadow layer's hold would never be released");
  }
  if (layer.lease) {
    return refuse("sync",
                  "cannot be leased: a slot is freed by a release that any instance may receive");
  }
  if (!layer.cost.empty()) {
    return refuse("cost", "counts requests in flight, one slot each: it takes no cost attribute");
  }
  if (layer.max_delay > 0) {
    return refuse("max_delay",
                  "cannot delay: a slot is freed by a release, at no time known in "
                  "advance");
  }
  if (layer.limit && layer.limit->burst) {
    return refuse("burst", "takes no burst: its limit is the requests in flight");
  }
  return std::nullopt;
}

Result<std::vector<std::int64_t>> kept_by_level(const LayerSpec& layer,
                                                const std::optional<PrioritySpec>& priority) {
  const std::string where = "layer \"" + layer.name + "\": reserve";
  if (!priority) return invalid_argument(where + " needs the policy's priority levels");
  if (layer.lease) {
    return invalid_argument(where + " cannot be kept by a leased layer (sync: lease): what the " +
                            "other priorities left is only known to the shared state");
  }
  std::vector<std::int64_t> kept(priority->levels.size(), 0);
  std::int64_t total = 0;
  for (const auto& [level, permille] : layer.reserve) {
    const auto at = std::find(priority->levels.begin(), priority->levels.end(), level);
    if (at == priority->levels.end()) {
      return invalid_argument(where + " names \"" + level + "\", not a priority level");
    }
    if (permille < 1 || permille > 1000) {
      return invalid_argument(where + " of \"" + level + "\" must be from 0.1% to 100%");
    }
    if (at + 1 == priority->levels.end()) {
      return invalid_argument(where + " of \"" + level +
                              "\", the lowest level, keeps nothing from anyone");
    }
    total += permille;
    // Kept from every level below this one.
    for (auto below = at + 1; below != priority->levels.end(); ++below) {
      kept[static_cast<std::size_t>(below - priority->levels.begin())] += permille;
    }
  }
  if (total > 1000) {
    return invalid_argument(where + " adds up to " + std::to_string(total / 10) + "." +
                            std::to_string(total % 10) + "%, more than 100%");
  }
  return kept;
}

Result<std::vector<Limit>> level_views(const Limit& limit, const LayerSpec& layer,
                                       const PrioritySpec& priority,
                                       const std::vector<std::int64_t>& kept_permille) {
  std::vector<Limit> views;
  views.reserve(kept_permille.size());
  for (std::size_t level = 0; level < kept_permille.size(); ++level) {
    const std::int64_t kept = kept_units(limit.capacity(), kept_permille[level]);
    Result<Limit> view = limit.with_reserved(kept);
    if (!view) return std::unexpected(view.error());
    // A share under 100 % that rounds to all of a small capacity would shut the level out.
    if (view->admit_capacity() == 0 && kept_permille[level] < 1000) {
      return invalid_argument("layer \"" + layer.name + "\": reserve leaves " +
                              priority.levels[level] + " requests nothing of " + limit.describe() +
                              " (capacity " + std::to_string(limit.capacity()) +
                              ", rounded down): raise the limit or burst, or keep a smaller share");
    }
    views.push_back(std::move(*view));
  }
  return views;
}

std::int64_t kept_units(std::int64_t capacity, std::int64_t permille) {
  // C < 2^52 and 1000 - permille <= 1000: the product stays below 2^62.
  return capacity - capacity * (1000 - permille) / 1000;
}

Result<std::shared_ptr<const Policy>> Policy::make(PolicySpec spec,
                                                   std::shared_ptr<const TenantDirectory> tenants,
                                                   UntilLoaded until_loaded) {
  if (spec.layers.empty()) return invalid_argument("a policy needs at least one layer");
  if (spec.priority) {
    const PrioritySpec& p = *spec.priority;
    if (auto problem = attribute_name_problem(p.attribute)) {
      return invalid_argument("priority attribute \"" + p.attribute + "\" " + *problem);
    }
    if (auto problem = priority_attribute_problem(spec)) return std::unexpected(*problem);
    if (p.levels.size() < 2) {
      return invalid_argument("priority levels must name at least two levels");
    }
    std::set<std::string> seen;
    for (const std::string& level : p.levels) {
      if (!is_name(level) || !seen.insert(level).second) {
        return invalid_argument(
            "priority levels must be unique names of letters, digits, '_' or "
            "'-': \"" +
            level + "\"");
      }
    }
    if (!seen.contains(p.default_level)) {
      return invalid_argument("priority default \"" + p.default_level + "\" is not a level");
    }
  }
  std::shared_ptr<Policy> policy(new Policy(std::move(spec), std::move(tenants)));
  policy->until_loaded_ = until_loaded;
  std::set<std::string> names;
  for (const LayerSpec& layer : policy->spec_.layers) {
    if (layer.name.empty() || !names.insert(layer.name).second) {
      return invalid_argument("layer names must be non-empty and unique: \"" + layer.name + "\"");
    }
    // The name begins every key of its layer: with ':' two layers' keys could meet ("a" +
    // "1:b:1:c" vs "a:7:1:b" + "c"); with CR/LF a response header could be forged.
    if (!is_name(layer.name)) {
      return invalid_argument("layer name \"" + layer.name +
                              "\" must be letters, digits, '_' or '-'");
    }
    if (layer.key.empty()) return invalid_argument("layer \"" + layer.name + "\" has no key");
    if (layer.lease) {
      if (auto problem = lease_spec_problem(*layer.lease)) {
        return invalid_argument("layer \"" + layer.name + "\": " + problem->message);
      }
      if (layer.max_delay > 0) {
        return invalid_argument("layer \"" + layer.name +
                                "\": " + std::string(lease_refuses_delay()));
      }
    }
    if (!layer.cost.empty()) {
      if (auto problem = attribute_name_problem(layer.cost)) {
        return invalid_argument("layer \"" + layer.name + "\": cost attribute \"" + layer.cost +
                                "\" " + *problem);
      }
    }
    // An attribute no request could give would refuse every request (docs/SPEC.md §2).
    std::vector<std::string_view> attributes(layer.key.begin(), layer.key.end());
    if (layer.by_plan) attributes.push_back(layer.by_plan->attribute);
    if (layer.by_endpoint) attributes.push_back(layer.by_endpoint->attribute);
    for (std::string_view attribute : attributes) {
      if (auto problem = attribute_name_problem(attribute)) {
        return invalid_argument("layer \"" + layer.name + "\": attribute \"" +
                                std::string(attribute) + "\" " + *problem);
      }
    }
    if (auto problem = concurrency_layer_problem(layer)) return std::unexpected(*problem);
    std::vector<std::int64_t> kept;
    if (!layer.reserve.empty()) {
      auto made = kept_by_level(layer, policy->spec_.priority);
      if (!made) return std::unexpected(made.error());
      kept = std::move(*made);
    }
    const int selectors =
        layer.limit.has_value() + layer.by_plan.has_value() + layer.by_endpoint.has_value();
    if (selectors != 1) {
      return invalid_argument("layer \"" + layer.name +
                              "\" needs exactly one of limit, by_plan, by_endpoint");
    }
    BuiltLayer built;
    if (layer.limit) {
      auto limit = build_limit(layer, *layer.limit, "limit");
      if (!limit) return std::unexpected(limit.error());
      built.fixed = *limit;
    }
    if (layer.by_plan) {
      for (const auto& [plan, rate] : layer.by_plan->plans) {
        auto limit = build_limit(layer, rate, "plan " + plan);
        if (!limit) return std::unexpected(limit.error());
        built.by_plan.emplace(plan, *limit);
      }
      if (!built.by_plan.contains(layer.by_plan->default_plan)) {
        return invalid_argument("layer \"" + layer.name + "\": default plan \"" +
                                layer.by_plan->default_plan + "\" is not a plan");
      }
      for (const auto& [value, plan] : layer.by_plan->assignments) {
        if (!built.by_plan.contains(plan)) {
          return invalid_argument("layer \"" + layer.name + "\": plan \"" + plan + "\" of \"" +
                                  value + "\" is not a plan");
        }
      }
    }
    if (layer.by_endpoint) {
      for (const auto& [route, rate] : layer.by_endpoint->limits) {
        auto limit = build_limit(layer, rate, "route " + route);
        if (!limit) return std::unexpected(limit.error());
        built.route_limits.push_back(*limit);
        built.route_names.push_back(route);
      }
      auto routes = RouteTable::make(built.route_names, layer.by_endpoint->case_sensitive);
      if (!routes) {
        return invalid_argument("layer \"" + layer.name + "\": " + routes.error().message);
      }
      built.routes = std::make_shared<const RouteTable>(std::move(*routes));
    }
    built.kept_permille = std::move(kept);
    policy->built_.push_back(std::move(built));
  }
  // Each level's view of every limit a reserving layer knows now (its fixed limit, its plans', its
  // routes'), keyed by where built_ holds the limit: built_ does not change from here on.
  for (std::size_t i = 0; i < policy->spec_.layers.size(); ++i) {
    BuiltLayer& built = policy->built_[i];
    if (built.kept_permille.empty()) continue;
    std::vector<const Limit*> limits;
    if (built.fixed) limits.push_back(&*built.fixed);
    for (const auto& [plan, limit] : built.by_plan) limits.push_back(&limit);
    for (const Limit& limit : built.route_limits) limits.push_back(&limit);
    for (const Limit* limit : limits) {
      auto views = level_views(*limit, policy->spec_.layers[i], *policy->spec_.priority,
                               built.kept_permille);
      if (!views) return std::unexpected(views.error());
      built.views.emplace(limit, std::move(*views));
    }
  }
  std::set<std::string> used, routed, costs;
  for (std::size_t i = 0; i < policy->spec_.layers.size(); ++i) {
    const LayerSpec& layer = policy->spec_.layers[i];
    used.insert(layer.key.begin(), layer.key.end());
    if (!layer.cost.empty()) {
      used.insert(layer.cost);
      costs.insert(layer.cost);
    }
    if (layer.by_plan) used.insert(layer.by_plan->attribute);
    if (policy->spec_.priority) used.insert(policy->spec_.priority->attribute);
    if (layer.by_endpoint) {
      used.insert(layer.by_endpoint->attribute);
      if (layer.mode == LayerMode::kEnforce) routed.insert(layer.by_endpoint->attribute);
      if (policy->built_[i].routes->uses_methods()) used.insert(kMethodAttribute);
    }
  }
  policy->attributes_used_.assign(used.begin(), used.end());
  policy->route_attributes_.assign(routed.begin(), routed.end());
  policy->cost_attributes_.assign(costs.begin(), costs.end());
  policy->has_concurrency_ = std::any_of(policy->spec_.layers.begin(), policy->spec_.layers.end(),
                                         [](const LayerSpec& l) { return l.is_concurrency(); });
  return std::shared_ptr<const Policy>(std::move(policy));
}

}  // namespace spillway::policy
