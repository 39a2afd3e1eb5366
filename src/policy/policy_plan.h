// Policy's side of the plan (src/policy/plan.h): a request's checks as a Plan (each layer's role:
// enforced, shadow, or blocked by a tenant record), and the Outcome rendered as a PolicyDecision
// (docs/SPEC.md §5): the layers that applied, enforced first, then the shadow ones; the top-level
// decision the executor chose (top_item); the shadow layers that would deny. Pure functions of
// their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/policy/plan.h"

namespace spillway::policy {

// A plan over `checks` (which it points into: keep them alive as long as the plan), charging
// `cost` where a layer has no cost of its own.
Plan policy_plan(const Policy& policy, const std::vector<Policy::Check>& checks, std::int64_t cost,
                 std::optional<Micros> now);

// The answer to a request whose plan was policy_plan(policy, checks, ...).
PolicyDecision policy_decision(const Policy& policy, const std::vector<Policy::Check>& checks,
                               const Outcome& outcome);

}  // namespace spillway::policy
