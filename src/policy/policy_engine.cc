#include "spillway/policy_engine.h"

#include <limits>
#include <mutex>
#include <set>

#include "src/policy/keys.h"
#include "src/policy/names.h"

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

const std::string* find_attribute(const Attributes& attributes, const std::string& name) {
  auto it = attributes.find(name);
  return it == attributes.end() ? nullptr : &it->second;
}

}  // namespace

// What the store checks for these layers; the keys point into `checks`.
std::vector<KeyedLimit> Policy::keyed_limits(const std::vector<Check>& checks) {
  std::vector<KeyedLimit> keyed;
  keyed.reserve(checks.size());
  for (const Check& c : checks) keyed.push_back({c.key, c.limit});
  return keyed;
}

Result<std::shared_ptr<const Policy>> Policy::make(PolicySpec spec) {
  if (spec.layers.empty()) return invalid_argument("a policy needs at least one layer");
  std::shared_ptr<Policy> policy(new Policy(std::move(spec)));
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
      for (const auto& [endpoint, rate] : layer.by_endpoint->limits) {
        auto limit = build_limit(layer, rate, "endpoint " + endpoint);
        if (!limit) return std::unexpected(limit.error());
        built.by_endpoint.emplace(endpoint, *limit);
      }
    }
    policy->built_.push_back(std::move(built));
  }
  return std::shared_ptr<const Policy>(std::move(policy));
}

Result<std::vector<Policy::Check>> Policy::resolve(const Attributes& attributes) const {
  std::vector<Check> checks;
  checks.reserve(spec_.layers.size());
  for (std::size_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& layer = spec_.layers[i];
    const BuiltLayer& built = built_[i];
    const Limit* limit = built.fixed ? &*built.fixed : nullptr;
    // A shadow layer must never turn a request away: when its attributes are missing or make
    // too long a key, it does not apply (as an unlisted endpoint does not).
    const bool shadow = layer.mode == LayerMode::kShadow;
    if (layer.by_plan) {
      const std::string* value = find_attribute(attributes, layer.by_plan->attribute);
      if (value == nullptr || value->empty()) {
        if (shadow) continue;
        return missing_attribute(layer.by_plan->attribute, layer.name);
      }
      auto assigned = layer.by_plan->assignments.find(*value);
      const std::string& plan = assigned == layer.by_plan->assignments.end()
                                    ? layer.by_plan->default_plan
                                    : assigned->second;
      limit = &built.by_plan.find(plan)->second;
    }
    if (layer.by_endpoint) {
      const std::string* value = find_attribute(attributes, layer.by_endpoint->attribute);
      auto it = value == nullptr ? built.by_endpoint.end() : built.by_endpoint.find(*value);
      if (it == built.by_endpoint.end()) continue;  // not a limited endpoint: the layer passes
      limit = &it->second;
    }
    std::string key;
    key.reserve(layer.name.size() + 32);
    key.append(layer.name);
    bool complete = true;
    for (const std::string& name : layer.key) {
      const std::string* value = find_attribute(attributes, name);
      if (value == nullptr || value->empty()) {
        if (!shadow) return missing_attribute(name, layer.name);
        complete = false;
        break;
      }
      append_key_part(key, *value);
    }
    if (!complete) continue;
    if (Result<void> fits = check_layer_key(key, layer.name); !fits) {
      if (shadow) continue;
      return std::unexpected(fits.error());
    }
    checks.push_back({i, std::move(key), limit});
  }
  return checks;
}

PolicyDecision Policy::combine(const std::vector<Check>& checks, const Decisions& decisions) const {
  PolicyDecision out;
  out.layers.reserve(checks.size());
  std::optional<std::size_t> top;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Decision& d = decisions[i];
    out.layers.push_back({layer_name(checks[i].layer), d, checks[i].limit->period()});
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
    out.layers.push_back({name, *decisions[i], shadow[i].limit->period(), true});
    if (!decisions[i]->allowed) out.shadow_denied.push_back(name);
  }
}

Result<PolicyDecision> Policy::decide(Store& store, const Attributes& attributes, std::int64_t cost,
                                      std::optional<Micros> now) const {
  auto checks = resolve(attributes);
  if (!checks) return std::unexpected(checks.error());
  const std::vector<Check> shadow = take_shadow(*checks);
  Decisions decisions;
  if (!checks->empty()) {
    auto enforced = store.check_all(keyed_limits(*checks), cost, now);
    if (!enforced) return std::unexpected(enforced.error());
    decisions = std::move(*enforced);
  }
  PolicyDecision out = combine(*checks, decisions);
  if (out.allowed && !shadow.empty()) {
    std::vector<Result<Decision>> would;
    for (const Check& check : shadow)
      would.push_back(store.check(check.key, *check.limit, cost, now));
    add_shadow(out, shadow, would);
  }
  return out;
}

void Policy::decide_async(Store& store, const Attributes& attributes, std::int64_t cost,
                          std::function<void(Result<PolicyDecision>)> done) const {
  auto checks = resolve(attributes);
  if (!checks) return done(std::unexpected(checks.error()));
  auto shadow = std::make_shared<std::vector<Check>>(take_shadow(*checks));
  // Then the shadow layers, once the enforced ones admitted: each checked on its own, all at
  // once; the last answer finishes the request. Their errors change nothing but shadow_error.
  using Done = std::function<void(Result<PolicyDecision>)>;
  auto then_shadow = [this, &store, cost, shadow](PolicyDecision out, Done finish) {
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
      store.check_async(check.key, *check.limit, cost, std::nullopt,
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
  store.check_all_async(
      keyed_limits(*owned), cost, std::nullopt,
      [this, owned, then_shadow, done = std::move(done)](Result<Decisions> decisions) mutable {
        if (!decisions) return done(std::unexpected(decisions.error()));
        then_shadow(combine(*owned, *decisions), std::move(done));
      });
}

}  // namespace spillway::policy
