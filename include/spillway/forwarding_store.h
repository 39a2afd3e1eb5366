// ForwardingStore: the base of every store wrapper (CircuitBreakerStore, OverLimitCache,
// LeaseStore, LocalFallbackStore). Each Store method goes to the wrapped store as it is; a
// wrapper overrides only what it changes, so that a method added to Store is added here once and
// reaches the backend through every wrapper that leaves it alone. decides_inline() in particular
// is the wrapped store's, as Store's contract says, unless a wrapper says otherwise.
//
// The synchronous forms (check, check_all) are not forwarded: Store's own call decide(), which a
// wrapper overrides, so a wrapper sees every request.
//
// Thread safety: as the wrapped store. Ownership: owns the wrapped store, which lives as long as
// this object unless a wrapper ends it earlier in its destructor (destroy_inner()).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "spillway/store.h"

namespace spillway {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

  void decide(const StoreRequest& request, AllCallback done) override {
    inner_->decide(request, std::move(done));
  }
  void settle(const Settlement& settlement, SettleCallback done) override {
    inner_->settle(settlement, std::move(done));
  }
  bool ready() const override { return inner_->ready(); }
  Result<void> probe() override { return inner_->probe(); }
  Result<void> wait_ready(std::chrono::milliseconds timeout) override {
    return inner_->wait_ready(timeout);
  }
  std::string_view status() const override { return inner_->status(); }
  void append_metrics(std::string& out) const override { inner_->append_metrics(out); }
  void clear_caches() override { inner_->clear_caches(); }
  bool decides_inline() const override { return inner_->decides_inline(); }

  // The wrapped store.
  Store& inner() const { return *inner_; }

 protected:
  // Ends the wrapped store now, from a wrapper's destructor, so that the wrapped store's last
  // callbacks run while the wrapper's own members are still whole.
  void destroy_inner() { inner_.reset(); }

 private:
  std::unique_ptr<Store> inner_;
};

// The store at the bottom of a stack of wrappers: the backend itself (`store` when it wraps
// nothing). For reading a key's state as the backend holds it, past caches and fallbacks.
inline Store& innermost_store(Store& store) {
  Store* at = &store;
  while (auto* wrapper = dynamic_cast<ForwardingStore*>(at)) at = &wrapper->inner();
  return *at;
}

}  // namespace spillway
