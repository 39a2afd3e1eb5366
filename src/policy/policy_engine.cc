// Policy's decisions and reservations through a Store (spillway/policy_engine.h): run_async
// resolves a request (policy_resolve.cc), makes its checks a plan (policy_plan.cc: each layer
// enforced, shadow, or blocked by a tenant record), runs the plan with the one executor
// (src/policy/plan.h: the enforced layers all-or-nothing, as one kReserve request whose layers are
// labelled by name when a reservation's `ttl` is given; then the shadow layers, each on its own,
// if admitted) and renders the outcome. decide and reserve are the asynchronous forms plus a wait
// (src/core/wait_for_answer.h).
// Thread safety: from any thread; `done` runs on the thread the store answers on (the caller's,
// inline, for an answer without I/O). The caller keeps this Policy and the store alive until
// `done` ran.
#include "spillway/policy_engine.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/inline_completion.h"
#include "src/core/wait_for_answer.h"
#include "src/policy/plan.h"
#include "src/policy/policy_plan.h"

namespace spillway::policy {

Result<PolicyDecision> Policy::decide(Store& store, const Attributes& attributes, std::int64_t cost,
                                      std::optional<Micros> now) const {
  return wait_for_answer<Result<PolicyDecision>>(
      [&](auto answer) { decide_async(store, attributes, cost, now, std::move(answer)); });
}

void Policy::decide_async(Store& store, const Attributes& attributes, std::int64_t cost,
                          std::optional<Micros> now,
                          std::function<void(Result<PolicyDecision>)> done,
                          bool holds_allowed) const {
  run_async(store, attributes, cost, now, std::nullopt, std::move(done), holds_allowed);
}

void Policy::reserve_async(Store& store, const Attributes& attributes, std::int64_t cost,
                           std::optional<Micros> now, std::chrono::milliseconds ttl,
                           std::function<void(Result<PolicyDecision>)> done) const {
  run_async(store, attributes, cost, now, ttl, std::move(done), true);
}

Result<PolicyDecision> Policy::reserve(Store& store, const Attributes& attributes,
                                       std::int64_t cost, std::chrono::milliseconds ttl,
                                       std::optional<Micros> now) const {
  return wait_for_answer<Result<PolicyDecision>>(
      [&](auto answer) { reserve_async(store, attributes, cost, now, ttl, std::move(answer)); });
}

void Policy::run_async(Store& store, const Attributes& attributes, std::int64_t cost,
                       std::optional<Micros> now, std::optional<std::chrono::milliseconds> ttl,
                       std::function<void(Result<PolicyDecision>)> done, bool holds_allowed) const {
  auto checks = resolve(attributes);
  if (!checks) {
    // Inline: a caller that chains requests from `done` must not grow its stack.
    return complete_inline(done, Result<PolicyDecision>(std::unexpected(checks.error())));
  }
  // The plan and what its views point into, alive until the executor answered.
  struct Owned {
    std::vector<Check> checks;
    Plan plan;
    std::string id;
    std::vector<ReservedLayer> layers;
    ReserveSpec reserve;
  };
  auto owned = std::make_shared<Owned>();
  owned->checks = std::move(*checks);
  // A concurrency layer that applies makes the request a reservation whose id is its ticket,
  // living as long as its longest hold (each hold leaves its key when its own hold_ttl ends). A
  // peek (cost 0 everywhere: no enforced layer charges a cost of its own above 0) holds nothing.
  const bool peek =
      cost == 0 && std::none_of(owned->checks.begin(), owned->checks.end(), [this](const Check& c) {
        const LayerSpec& layer = spec_.layers[c.layer];
        return c.cost > 0 && !c.blocked && !layer.is_concurrency() &&
               layer.mode == LayerMode::kEnforce;
      });
  Micros hold_ttl = 0;
  Micros first_expiry = 0;
  for (Check& c : owned->checks) {
    const LayerSpec& layer = spec_.layers[c.layer];
    if (!layer.is_concurrency() || c.blocked) continue;
    if (peek) {
      c.cost = 0;
      continue;
    }
    if (!holds_allowed) {
      // Inline, as the resolve error above: nothing was charged.
      return complete_inline(
          done, Result<PolicyDecision>(std::unexpected(Error{
                    Errc::kInvalidArgument,
                    "layer \"" + layer.name +
                        "\" is a concurrency limit, which this front end cannot apply: it has no "
                        "release step, so the slot would stay held until its hold_ttl",
                    std::string(kHoldsRefused)})));
    }
    hold_ttl = std::max(hold_ttl, *layer.hold_ttl);
    first_expiry = first_expiry == 0 ? *layer.hold_ttl : std::min(first_expiry, *layer.hold_ttl);
  }
  if (hold_ttl > 0) {
    const auto hold = std::chrono::milliseconds(hold_ttl / 1000);
    ttl = ttl ? std::max(*ttl, hold) : hold;
  }
  owned->plan = policy_plan(*this, owned->checks, cost, now);
  if (ttl) {
    // A reservation: each enforced key labelled with its layer's name, metered when the layer
    // has a cost attribute (a settlement's single `cost` is the actual value of that attribute),
    // a hold when it is a concurrency layer (every settlement gives its slot back; a peek's
    // holds nothing, and no commit's cost may charge it either).
    for (const Check& c : owned->checks) {
      const LayerSpec& layer = spec_.layers[c.layer];
      if (layer.mode == LayerMode::kShadow || c.blocked) continue;
      owned->layers.push_back({layer_name(c.layer), !layer.cost.empty(), layer.is_concurrency()});
    }
    // None: no enforced layer applies, nothing is reserved and no id is given.
    if (!owned->layers.empty()) {
      owned->id = new_reservation_id();
      owned->reserve = ReserveSpec{.id = owned->id, .ttl = *ttl, .layers = owned->layers};
      owned->plan.reserve = &owned->reserve;
    }
  }
  // The caller keeps this Policy and the store alive until `done` runs (the server holds them).
  std::shared_ptr<const Plan> plan(owned, &owned->plan);
  execute(store, std::move(plan),
          [this, owned, first_expiry, done = std::move(done)](Result<Outcome> outcome) mutable {
            if (!outcome) return done(std::unexpected(std::move(outcome.error())));
            PolicyDecision out = policy_decision(*this, owned->checks, *outcome);
            if (out.allowed && owned->plan.reserve != nullptr) {
              out.reservation = owned->id;
              out.hold_expires = first_expiry;
              out.reservation_ttl = owned->reserve.ttl;
            }
            done(std::move(out));
          });
}

}  // namespace spillway::policy
