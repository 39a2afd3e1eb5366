// A circuit breaker around any Store: after `failures` consecutive backend failures (kUnavailable
// or kTimeout) the backend is taken to be down, and checks fail at once with kUnavailable ("circuit
// open") instead of each waiting for its timeout; the caller's on_error answers them. Every
// `probe_interval` one check (never two at a time) goes through as a probe: success closes the
// circuit, failure keeps it open for another interval. Input errors and a full store are not
// backend failures and do not count.
//
// Thread safety: as the wrapped store (every method from any thread); the state is atomic.
// Ownership: owns the wrapped store; shares options.clock. Time: options.clock (default
// SteadyClock), read for the probe timer only (the wrapped store keeps its own clock).
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "spillway/clock.h"
#include "spillway/forwarding_store.h"

namespace spillway {

struct CircuitBreakerOptions {
  int failures = 5;  // consecutive failures that open the circuit
  std::chrono::milliseconds probe_interval{1000};
  std::shared_ptr<const Clock> clock;  // default: SteadyClock
};

class CircuitBreakerStore final : public ForwardingStore {
 public:
  CircuitBreakerStore(std::unique_ptr<Store> inner, CircuitBreakerOptions options = {});
  ~CircuitBreakerStore() override;

  // A refused call (the circuit is open, and this is not the probe) is answered at once.
  void decide(const StoreRequest& request, AllCallback done) override;
  // settle: passed on, outside the breaker (neither refused nor counted: a settlement is neither
  // a probe nor a sign of the backend's health).

  // Not ready while the circuit is open.
  bool ready() const override;
  // The wrapped store's probe; a success closes the circuit (the backend answers a check), a
  // failure leaves it as it is (the probe's failure already makes the inner store not ready).
  Result<void> probe() override;
  // wait_ready: the wrapped store's (the circuit does not change whether the backend connects).
  std::string_view status() const override;

  // Whether the circuit is open now (checks refused but for the probe).
  bool open() const;

 private:
  // The options, the clock and the circuit's atomic state (failures in a row, open, probing,
  // the next probe's time): src/open_store/circuit_breaker.cc.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
