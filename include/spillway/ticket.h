// The slots a request holds under concurrency limits (Limit::concurrency, docs/SPEC.md §2.5),
// released when the ticket is destroyed: the C++ form of POST /v1/release.
//
//   auto decided = policy->decide(store, attributes, 1);
//   if (decided && decided->allowed) {
//     spillway::Ticket ticket(store, decided->reservation);  // empty: it holds nothing
//     ... the work runs; the slots come back when `ticket` goes out of scope ...
//   }
//
// Releasing settles the ticket's reservation with no cost: every hold gives its slot back, and the
// request's rate layers keep their charge. A ticket not released (a crashed caller) frees its
// slots when their hold_ttl ends. The store must outlive the ticket. Move-only; not thread-safe
// (one owner), the store it calls is. Releasing waits for the store's answer (settle_and_wait):
// do not let a ticket end on a thread that the store answers on (an event loop's own thread).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "spillway/store.h"

namespace spillway {

class Ticket {
 public:
  Ticket() = default;
  // `id` is the admitted decision's reservation (PolicyDecision::reservation); empty holds nothing.
  Ticket(Store& store, std::string id) : store_(&store), id_(std::move(id)) {}
  Ticket(Ticket&& other) noexcept
      : store_(std::exchange(other.store_, nullptr)), id_(std::move(other.id_)) {}
  Ticket& operator=(Ticket&& other) noexcept {
    if (this != &other) {
      (void)release();
      store_ = std::exchange(other.store_, nullptr);
      id_ = std::move(other.id_);
    }
    return *this;
  }
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;
  // Releases (an error is dropped: the holds expire with their hold_ttl).
  ~Ticket() { (void)release(); }

  const std::string& id() const { return id_; }
  bool holds() const { return store_ != nullptr && !id_.empty(); }

  // Gives the slots back now, once: what the store settled (per layer: refunded is 1 for each
  // slot given back, 0 for one its hold_ttl had freed). Errors are the store's: kNotFound (its
  // holds expired), kConflict (released already elsewhere), a backend error. Either way the
  // ticket holds nothing afterwards; a second call answers an empty Settled.
  Result<Settled> release(std::optional<Micros> now = std::nullopt) {
    if (!holds()) return Settled{};
    Store* store = std::exchange(store_, nullptr);
    return store->settle_and_wait({.id = id_, .now = now, .release = true});
  }

 private:
  Store* store_ = nullptr;
  std::string id_;
};

}  // namespace spillway
