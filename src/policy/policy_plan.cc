// Policy's plans and answers (src/policy/policy_plan.h).
#include "src/policy/policy_plan.h"

#include <algorithm>
#include <string>
#include <utility>

namespace spillway::policy {
namespace {

bool is_shadow(const Policy& policy, const Policy::Check& check) {
  return policy.spec().layers[check.layer].mode == LayerMode::kShadow;
}

LayerDecision layer_answer(const Policy& policy, const Policy::Check& check, const Decision& d,
                           bool shadow) {
  return {policy.layer_name(check.layer),
          d,
          check.limit->period(),
          shadow,
          check.plan != nullptr ? *check.plan : std::string(),
          check.limit->is_concurrency()};
}

}  // namespace

Plan policy_plan(const Policy& policy, const std::vector<Policy::Check>& checks, std::int64_t cost,
                 std::optional<Micros> now) {
  Plan plan{.cost = cost, .now = now};
  plan.items.reserve(checks.size());
  for (const Policy::Check& c : checks) {
    PlanItem item{.key = c.key, .limit = c.limit, .cost = c.cost, .lease = c.lease};
    if (is_shadow(policy, c)) {
      item.role = Role::kShadow;
      item.lease = nullptr;  // a shadow layer is always exact (docs/SPEC.md)
    } else if (c.blocked) {
      // Denied by this layer, nothing charged: the caller can never pass.
      item.role = Role::kBlocked;
      item.preset = Decision{.allowed = false,
                             .limit = c.limit->limit(),
                             .remaining = 0,
                             .retry_after = kNever,
                             .reset_after = 0};
    }
    plan.items.push_back(item);
  }
  return plan;
}

PolicyDecision policy_decision(const Policy& policy, const std::vector<Policy::Check>& checks,
                               const Outcome& outcome) {
  PolicyDecision out;
  out.allowed = outcome.admitted;
  if (!checks.empty() && checks.front().priority != nullptr)
    out.priority = *checks.front().priority;
  out.layers.reserve(checks.size());
  bool blocked = false;  // a blocked caller's answer names the first blocking layer only
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (is_shadow(policy, checks[i]) || !outcome.items[i].decision) continue;
    if (checks[i].blocked && std::exchange(blocked, true)) continue;
    const Decision& d = *outcome.items[i].decision;
    out.layers.push_back(layer_answer(policy, checks[i], d, false));
    if (out.allowed) out.delay = std::max(out.delay, d.delay);
  }
  if (outcome.top) {
    const Policy::Check& top = checks[*outcome.top];
    out.top = *outcome.items[*outcome.top].decision;
    out.top_period = top.limit->period();
    out.top_capacity = top.limit->admit_capacity();  // what this priority may fill
    if (!out.allowed) {
      out.denied_by = policy.layer_name(top.layer);
      out.denied_key = top.key;
      out.shed = top.limit->reserved() > 0 && !top.blocked;
    }
  } else {
    out.top = Decision{.allowed = true};  // no layer applied
  }
  // The shadow layers: checked once the request was admitted, each on its own.
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (!is_shadow(policy, checks[i]) || !out.allowed) continue;
    out.shadow_checked = true;
    if (!outcome.items[i].decision) continue;  // its error is shadow_error
    const Decision& d = *outcome.items[i].decision;
    out.layers.push_back(layer_answer(policy, checks[i], d, true));
    if (!d.allowed) out.shadow_denied.push_back(policy.layer_name(checks[i].layer));
  }
  out.shadow_error = outcome.shadow_error;
  return out;
}

}  // namespace spillway::policy
