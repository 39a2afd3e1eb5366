// A circuit breaker around any Store: after `failures` consecutive backend failures (kUnavailable
// or kTimeout) the backend is taken to be down, and checks fail at once with kUnavailable ("circuit
// open") instead of each waiting for its timeout; the caller's on_error answers them. Every
// `probe_interval` one check (never two at a time) goes through as a probe: success closes the
// circuit, failure keeps it open for another interval. Input errors and a full store are not
// backend failures and do not count.
//
// Thread safety: as the wrapped store (every method from any thread); the state is atomic.
// Ownership: owns the wrapped store. Time: options.clock (default SteadyClock), read for the probe
// timer only (the wrapped store keeps its own clock).
#pragma once

#include <atomic>
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

  bool open() const { return open_.load(std::memory_order_acquire); }

 private:
  enum class Call { kNormal, kProbe, kRefused };
  // Whether a call may go to the backend now: the circuit is closed, or this call is the probe.
  Call admit_call();
  // What the backend's answer (nullptr: a decision) says about its health.
  void record(const Error* error, Call call);
  Micros probe_interval() const;

  const CircuitBreakerOptions options_;
  std::atomic<int> consecutive_failures_{0};
  std::atomic<bool> open_{false};
  std::atomic<bool> probing_{false};
  std::shared_ptr<const Clock> clock_;
  std::atomic<Micros> next_probe_{0};  // clock_'s time
};

}  // namespace spillway
