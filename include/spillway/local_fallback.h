// on_error: local. Checks go to the primary store (Redis, usually behind a CircuitBreakerStore);
// when it fails (kUnavailable or kTimeout: down, unreachable, too slow, circuit open), the same
// check is decided by an in-process store instead, with the same limits. When the primary answers
// again, decisions come from it again (the local state is kept for the next outage).
//
// The trade-off, documented for operators: while the primary is down, every instance enforces
// the full limit on its own, so N instances may admit up to N times the limit in all. Better than
// admitting everything (allow) or nothing (deny) for most APIs; wrong where the limit protects a
// hard quota.
//
// Visible: status() is "local_fallback" while the last answer came from the local store; the
// metrics count local decisions (spillway_local_fallback_decisions_total); each fallback logs a
// line on stderr, one a second at most.
//
// Thread safety: as the wrapped stores (every method from any thread). Ownership: owns both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "spillway/forwarding_store.h"

namespace spillway {

// The wrapped store (ForwardingStore::inner()) is the primary.
class LocalFallbackStore final : public ForwardingStore {
 public:
  LocalFallbackStore(std::unique_ptr<Store> primary, std::unique_ptr<Store> local);
  ~LocalFallbackStore() override;

  void decide(const StoreRequest& request, AllCallback done) override;
  // Reservations are the primary's alone: a kReserve is never decided locally (its error is
  // the answer), and settle() goes to the primary (ForwardingStore's).

  // It can always decide: ready while the local store is (a load balancer keeps the instance).
  bool ready() const override;
  // probe, wait_ready, clear_caches, decides_inline: the primary's (ForwardingStore's); probe
  // unlike ready(): whether the backend itself answers.
  std::string_view status() const override;
  void append_metrics(std::string& out) const override;

  // Decisions taken by the local store since construction.
  std::uint64_t local_decisions() const;
  Store& primary() const { return inner(); }

 private:
  // The local store, the log of fallbacks and the state (on local, decisions counted):
  // src/open_store/local_fallback.cc.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
