// Policy's decisions and reservations through a Store (spillway/policy_engine.h): run_async
// resolves a request (policy_resolve.cc), answers a blocked caller at once, sends the enforced
// layers to the store all-or-nothing (Store::check_all_async, or one kReserve request whose
// layers are labelled by name when a reservation's `ttl` is given), combines the answers
// (policy_combine.cc), then, if admitted, checks each shadow layer on its own. decide and reserve
// are the asynchronous forms plus a wait (src/core/wait_for_answer.h).
// Thread safety: from any thread; `done` runs on the thread the store answers on (the caller's,
// inline, for an answer without I/O). The caller keeps this Policy and the store alive until
// `done` ran.
#include "spillway/policy_engine.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/core/inline_completion.h"
#include "src/core/wait_for_answer.h"

namespace spillway::policy {

// What the store checks for these layers; the keys point into `checks`.
std::vector<KeyedLimit> Policy::keyed_limits(const std::vector<Check>& checks) {
  std::vector<KeyedLimit> keyed;
  keyed.reserve(checks.size());
  for (const Check& c : checks) keyed.push_back({c.key, c.limit, c.cost, c.lease});
  return keyed;
}

Result<PolicyDecision> Policy::decide(Store& store, const Attributes& attributes, std::int64_t cost,
                                      std::optional<Micros> now) const {
  return wait_for_answer<Result<PolicyDecision>>(
      [&](auto answer) { decide_async(store, attributes, cost, now, std::move(answer)); });
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
