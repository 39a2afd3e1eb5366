#include "spillway/circuit_breaker.h"

#include <string>

#include "src/core/inline_completion.h"

namespace spillway {
namespace {

Error circuit_open_error(int failures) {
  return Error{Errc::kUnavailable, "circuit open: the backend failed " + std::to_string(failures) +
                                       " times in a row; probing it again shortly"};
}

}  // namespace

CircuitBreakerStore::CircuitBreakerStore(std::unique_ptr<Store> inner,
                                         CircuitBreakerOptions options)
    : ForwardingStore(std::move(inner)),
      options_(options),
      clock_(options_.clock ? options_.clock : std::make_shared<SteadyClock>()) {}

Micros CircuitBreakerStore::probe_interval() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(options_.probe_interval).count();
}

CircuitBreakerStore::Call CircuitBreakerStore::admit_call() {
  if (!open_.load(std::memory_order_acquire)) return Call::kNormal;
  const Micros now = clock_->now();
  if (now < next_probe_.load(std::memory_order_acquire)) return Call::kRefused;
  bool expected = false;  // one probe at a time
  if (!probing_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return Call::kRefused;
  }
  next_probe_.store(now + probe_interval(), std::memory_order_release);
  return Call::kProbe;
}

void CircuitBreakerStore::record(const Error* error, Call call) {
  const bool was_probe = call == Call::kProbe;
  if (was_probe) probing_.store(false, std::memory_order_release);
  // Refused input (e.g. a reservation a backend does not keep) says nothing of its health.
  if (error != nullptr && error->code == Errc::kInvalidArgument) return;
  if (error == nullptr || !is_backend_failure(*error)) {
    consecutive_failures_.store(0, std::memory_order_release);
    open_.store(false, std::memory_order_release);
    return;
  }
  const int failures = consecutive_failures_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if ((failures >= options_.failures || was_probe) && !open_.exchange(true)) {
    next_probe_.store(clock_->now() + probe_interval(), std::memory_order_release);
  }
}

void CircuitBreakerStore::decide(const StoreRequest& request, AllCallback done) {
  const Call call = admit_call();
  if (call == Call::kRefused) {
    return complete_inline(
        done, Result<Decisions>(std::unexpected(circuit_open_error(options_.failures))));
  }
  inner().decide(request, [this, call, done = std::move(done)](Result<Decisions> decisions) {
    record(decisions ? nullptr : &decisions.error(), call);
    done(std::move(decisions));
  });
}

Result<void> CircuitBreakerStore::probe() {
  Result<void> answer = inner().probe();
  if (answer) record(nullptr, Call::kNormal);
  return answer;
}

bool CircuitBreakerStore::ready() const { return !open() && inner().ready(); }

std::string_view CircuitBreakerStore::status() const {
  return open() ? "circuit_open" : inner().status();
}

}  // namespace spillway
