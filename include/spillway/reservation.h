// A reservation held by a C++ caller (usage-based limits, docs/SPEC.md §5.3): the id a reserve
// answered with (PolicyDecision::reservation) and the store that keeps it, settled once through
// commit() or cancel() — Store::settle, spelled for the caller:
//
//   auto decided = policy->reserve(store, attributes, 1, std::chrono::minutes(10));
//   if (decided && decided->allowed) {
//     spillway::Reservation held(store, decided->reservation);
//     ... the work runs ...
//     held.commit(tokens_used);  // or held.cancel() when it never ran
//   }
//
// The store must outlive it. A plain value; settling through a copy is settling the same
// reservation (the second settlement is the store's kConflict). Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "spillway/store.h"

namespace spillway {

class Reservation {
 public:
  Reservation(Store& store, std::string id) : store_(&store), id_(std::move(id)) {}

  const std::string& id() const { return id_; }

  // The actual cost of the metered layers (those with a cost attribute), or of every layer when
  // none is metered: below the estimate the difference comes back, above it is charged as debt.
  Result<Settled> commit(std::int64_t cost, std::optional<Micros> now = std::nullopt) const {
    return store_->settle_and_wait({.id = id_, .cost = cost, .now = now});
  }
  // The actual cost of each named layer; the others keep their estimate.
  Result<Settled> commit(std::span<const LayerCost> costs,
                         std::optional<Micros> now = std::nullopt) const {
    return store_->settle_and_wait({.id = id_, .costs = costs, .now = now});
  }
  // The work never ran: every layer's estimate back.
  Result<Settled> cancel(std::optional<Micros> now = std::nullopt) const {
    return store_->settle_and_wait({.id = id_, .cancel = true, .now = now});
  }

 private:
  Store* store_;
  std::string id_;
};

}  // namespace spillway
