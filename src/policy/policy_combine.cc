// Policy's answers from the store's (spillway/policy_engine.h, docs/SPEC.md §5): the enforced
// layers' decisions combined into one (the denying layer with the longest wait, kNever the
// longest of all; else the admitting layer with the fewest remaining), the shadow layers taken
// out of a request's checks and their answers added to the decision, and the answer to a caller
// a tenant record blocks (nothing charged). Pure functions of their arguments; thread-safe.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "spillway/policy_engine.h"

namespace spillway::policy {

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

}  // namespace spillway::policy
