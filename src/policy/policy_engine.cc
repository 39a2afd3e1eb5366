#include "spillway/policy_engine.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <mutex>
#include <set>

#include "src/core/inline_completion.h"
#include "src/core/text.h"
#include "src/core/wait_for_answer.h"
#include "src/policy/caller_value.h"
#include "src/policy/endpoint_path.h"
#include "src/policy/keys.h"
#include "src/policy/names.h"
#include "src/policy/routes.h"

namespace spillway::policy {
namespace {

Result<Limit> build_limit(const LayerSpec& layer, const RateSpec& rate, const std::string& what) {
  auto limit = Limit::make(layer.algorithm, rate.limit, rate.period, rate.burst);
  if (!limit) {
    return invalid_argument("layer \"" + layer.name + "\" " + what + ": " + limit.error().message);
  }
  return limit;
}

// "attribute \"api_key\" is required (layer gateway)", with the attribute as the error's field.
std::unexpected<Error> missing_attribute(const std::string& attribute, const std::string& layer) {
  return std::unexpected(Error{Errc::kInvalidArgument,
                               "attribute \"" + attribute + "\" is required (layer " + layer + ")",
                               attribute});
}

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

const std::string* find_attribute(const Attributes& attributes, const std::string& name) {
  auto it = attributes.find(name);
  return it == attributes.end() ? nullptr : &it->second;
}

// The error of a bad path attribute, naming the attribute.
Error with_field(Error error, const std::string& attribute) {
  error.message = "\"" + attribute + "\": " + error.message;
  error.field = attribute;
  return error;
}

// A tenant record's own rate for `layer`, as a Limit of the layer's algorithm; null when the
// record has none for it (or one the algorithm refuses: the admin API checks them, a record
// written before a policy change may not fit). Built per request: custom contracts are few, and
// a Limit is a few numbers.
std::shared_ptr<const Limit> custom_limit(const LayerSpec& layer, const TenantRecord& record) {
  auto own = record.limits.find(layer.name);
  if (own == record.limits.end()) return nullptr;
  auto made = Limit::make(layer.algorithm, own->second.limit, own->second.period);
  return made ? std::make_shared<const Limit>(*made) : nullptr;
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

// What the store checks for these layers; the keys point into `checks`.
std::vector<KeyedLimit> Policy::keyed_limits(const std::vector<Check>& checks) {
  std::vector<KeyedLimit> keyed;
  keyed.reserve(checks.size());
  for (const Check& c : checks) keyed.push_back({c.key, c.limit, c.cost, c.lease});
  return keyed;
}

Result<std::shared_ptr<const Policy>> Policy::make(PolicySpec spec,
                                                   std::shared_ptr<const TenantDirectory> tenants,
                                                   UntilLoaded until_loaded) {
  if (spec.layers.empty()) return invalid_argument("a policy needs at least one layer");
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
    policy->built_.push_back(std::move(built));
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
    if (layer.by_endpoint) {
      used.insert(layer.by_endpoint->attribute);
      if (layer.mode == LayerMode::kEnforce) routed.insert(layer.by_endpoint->attribute);
      if (policy->built_[i].routes->uses_methods()) used.insert(kMethodAttribute);
    }
  }
  policy->attributes_used_.assign(used.begin(), used.end());
  policy->route_attributes_.assign(routed.begin(), routed.end());
  policy->cost_attributes_.assign(costs.begin(), costs.end());
  return std::shared_ptr<const Policy>(std::move(policy));
}

Result<std::vector<Policy::Check>> Policy::resolve(const Attributes& attributes) const {
  std::vector<Check> checks;
  checks.reserve(spec_.layers.size());
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
    std::int64_t cost = kRequestCost;
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
    checks.push_back({i, std::move(key), limit, plan_name, std::move(custom), blocked, cost,
                      layer.lease ? &*layer.lease : nullptr});
  }
  return checks;
}

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

PolicyDecision Policy::combine(const std::vector<Check>& checks, const Decisions& decisions) const {
  PolicyDecision out;
  out.layers.reserve(checks.size());
  std::optional<std::size_t> top;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Decision& d = decisions[i];
    out.layers.push_back({layer_name(checks[i].layer), d, checks[i].limit->period(), false,
                          checks[i].plan != nullptr ? *checks[i].plan : std::string()});
    if (!d.allowed) {
      out.allowed = false;
      // The denying layer with the longest wait; "never" (-1) is the longest of all.
      const auto wait = [](const Decision& x) {
        return x.retry_after == kNever ? std::numeric_limits<Micros>::max() : x.retry_after;
      };
      if (!top || decisions[*top].allowed || wait(d) > wait(decisions[*top])) top = i;
    } else if (out.allowed && (!top || d.remaining < decisions[*top].remaining)) {
      top = i;
    }
  }
  if (top) {
    out.top = decisions[*top];
    out.top_period = checks[*top].limit->period();
    out.top_capacity = checks[*top].limit->capacity();
    if (!out.allowed) {
      out.denied_by = out.layers[*top].name;
      out.denied_key = checks[*top].key;
    }
  } else {
    out.top = Decision{.allowed = true};  // no layer applied
  }
  return out;
}

std::vector<Policy::Check> Policy::take_shadow(std::vector<Check>& checks) const {
  std::vector<Check> shadow;
  for (Check& check : checks) {
    if (spec_.layers[check.layer].mode == LayerMode::kShadow) shadow.push_back(std::move(check));
  }
  std::erase_if(checks, [&](const Check& check) {
    return spec_.layers[check.layer].mode == LayerMode::kShadow;
  });
  return shadow;
}

void Policy::add_shadow(PolicyDecision& out, const std::vector<Check>& shadow,
                        const std::vector<Result<Decision>>& decisions) const {
  out.shadow_checked = true;
  for (std::size_t i = 0; i < shadow.size(); ++i) {
    if (!decisions[i]) {
      if (!out.shadow_error) out.shadow_error = decisions[i].error();
      continue;
    }
    const std::string& name = layer_name(shadow[i].layer);
    out.layers.push_back({name, *decisions[i], shadow[i].limit->period(), true,
                          shadow[i].plan != nullptr ? *shadow[i].plan : std::string()});
    if (!decisions[i]->allowed) out.shadow_denied.push_back(name);
  }
}

Result<PolicyDecision> Policy::decide(Store& store, const Attributes& attributes, std::int64_t cost,
                                      std::optional<Micros> now) const {
  return wait_for_answer<Result<PolicyDecision>>(
      [&](auto answer) { decide_async(store, attributes, cost, now, std::move(answer)); });
}

PolicyDecision Policy::blocked_answer(const Check& blocked) const {
  PolicyDecision out;
  out.allowed = false;
  out.top = Decision{.allowed = false,
                     .limit = blocked.limit->limit(),
                     .remaining = 0,
                     .retry_after = kNever,
                     .reset_after = 0};
  out.top_period = blocked.limit->period();
  out.top_capacity = blocked.limit->capacity();
  out.denied_by = layer_name(blocked.layer);
  out.denied_key = blocked.key;
  out.layers.push_back({layer_name(blocked.layer), out.top, out.top_period, false,
                        blocked.plan != nullptr ? *blocked.plan : std::string()});
  return out;
}

void Policy::decide_async(Store& store, const Attributes& attributes, std::int64_t cost,
                          std::optional<Micros> now,
                          std::function<void(Result<PolicyDecision>)> done) const {
  run_async(store, attributes, cost, now, std::nullopt, std::move(done));
}

void Policy::reserve_async(Store& store, const Attributes& attributes, std::int64_t cost,
                           std::optional<Micros> now, std::chrono::milliseconds ttl,
                           std::function<void(Result<PolicyDecision>)> done) const {
  run_async(store, attributes, cost, now, ttl, std::move(done));
}

Result<PolicyDecision> Policy::reserve(Store& store, const Attributes& attributes,
                                       std::int64_t cost, std::chrono::milliseconds ttl,
                                       std::optional<Micros> now) const {
  return wait_for_answer<Result<PolicyDecision>>(
      [&](auto answer) { reserve_async(store, attributes, cost, now, ttl, std::move(answer)); });
}

void Policy::run_async(Store& store, const Attributes& attributes, std::int64_t cost,
                       std::optional<Micros> now, std::optional<std::chrono::milliseconds> ttl,
                       std::function<void(Result<PolicyDecision>)> done) const {
  auto checks = resolve(attributes);
  if (!checks) {
    // Inline: a caller that chains requests from `done` must not grow its stack.
    return complete_inline(done, Result<PolicyDecision>(std::unexpected(checks.error())));
  }
  for (const Check& check : *checks) {
    if (check.blocked) return complete_inline(done, Result<PolicyDecision>(blocked_answer(check)));
  }
  auto shadow = std::make_shared<std::vector<Check>>(take_shadow(*checks));
  // Then the shadow layers, once the enforced ones admitted: each checked on its own, all at
  // once; the last answer finishes the request. Their errors change nothing but shadow_error.
  using Done = std::function<void(Result<PolicyDecision>)>;
  auto then_shadow = [this, &store, cost, now, shadow](PolicyDecision out, Done finish) {
    if (!out.allowed || shadow->empty()) return finish(std::move(out));
    struct Pending {
      PolicyDecision decided;
      Done finish;
      std::mutex mutex;
      std::vector<Result<Decision>> would;
      std::size_t left;
    };
    auto pending = std::make_shared<Pending>();
    pending->decided = std::move(out);
    pending->finish = std::move(finish);
    pending->would.assign(shadow->size(), std::unexpected(Error{Errc::kInternal, "unanswered"}));
    pending->left = shadow->size();
    for (std::size_t i = 0; i < shadow->size(); ++i) {
      const Check& check = (*shadow)[i];
      store.check_async(check.key, *check.limit,
                        cost_of({check.key, check.limit, check.cost}, cost), now,
                        [this, shadow, pending, i](Result<Decision> would) {
                          {
                            std::lock_guard lock(pending->mutex);
                            pending->would[i] = std::move(would);
                            if (--pending->left > 0) return;
                          }
                          add_shadow(pending->decided, *shadow, pending->would);
                          pending->finish(std::move(pending->decided));
                        });
    }
  };
  if (checks->empty()) return then_shadow(combine(*checks, {}), std::move(done));
  auto owned = std::make_shared<std::vector<Check>>(std::move(*checks));
  // The caller keeps this Policy and the store alive until `done` runs (the server holds them).
  if (!ttl) {
    return store.check_all_async(
        keyed_limits(*owned), cost, now,
        [this, owned, then_shadow, done = std::move(done)](Result<Decisions> decisions) mutable {
          if (!decisions) return done(std::unexpected(decisions.error()));
          then_shadow(combine(*owned, *decisions), std::move(done));
        });
  }
  // A reservation: each key labelled with its layer's name, metered when the layer has a cost
  // attribute (a settlement's single `cost` is the actual value of that attribute).
  const std::string id = new_reservation_id();
  std::vector<ReservedLayer> layers;
  layers.reserve(owned->size());
  for (const Check& c : *owned) {
    layers.push_back({layer_name(c.layer), !spec_.layers[c.layer].cost.empty()});
  }
  const std::vector<KeyedLimit> keyed = keyed_limits(*owned);
  const ReserveSpec spec{.id = id, .ttl = *ttl, .layers = layers};
  Result<StoreRequest> request = StoreRequest::make_reserve(keyed, cost, now, spec);
  if (!request) {
    return complete_inline(done, Result<PolicyDecision>(std::unexpected(request.error())));
  }
  store.decide(*request, [this, owned, then_shadow, id,
                          done = std::move(done)](Result<Decisions> decisions) mutable {
    if (!decisions) return done(std::unexpected(decisions.error()));
    PolicyDecision out = combine(*owned, *decisions);
    if (out.allowed) out.reservation = id;
    then_shadow(std::move(out), std::move(done));
  });
}

}  // namespace spillway::policy
