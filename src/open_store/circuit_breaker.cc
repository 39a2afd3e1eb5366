// CircuitBreakerStore (spillway/circuit_breaker.h): its state is Impl's, all atomics, so that a
// check takes no lock; the header keeps only a pointer to it.
#include "spillway/circuit_breaker.h"

#include <atomic>
#include <string>

#include "src/core/inline_completion.h"

namespace spillway {
namespace {

Error circuit_open_error(int failures) {
  return Error{Errc::kUnavailable, "circuit open: the backend failed " + std::to_string(failures) +
                                       " times in a row; probing it again shortly"};
}

}  // namespace

struct CircuitBreakerStore::Impl {
  enum class Call { kNormal, kProbe, kRefused };

  explicit Impl(CircuitBreakerOptions given)
      : options(std::move(given)),
        clock(options.clock ? options.clock : std::make_shared<SteadyClock>()) {}
  // Whether a call may go to the backend now: the circuit is closed, or this call is the probe.
  Call admit_call();
  // What the backend's answer (nullptr: a decision) says about its health.
  void record(const Error* error, Call call);
  Micros probe_interval() const;

  const CircuitBreakerOptions options;
  std::atomic<int> consecutive_failures{0};
  std::atomic<bool> open{false};
  std::atomic<bool> probing{false};
  const std::shared_ptr<const Clock> clock;
  std::atomic<Micros> next_probe{0};  // clock's time
};

CircuitBreakerStore::CircuitBreakerStore(std::unique_ptr<Store> inner,
                                         CircuitBreakerOptions options)
    : ForwardingStore(std::move(inner)), impl_(std::make_unique<Impl>(options)) {}

// The wrapped store first: its last callbacks (in-flight checks it fails) record to impl_.
CircuitBreakerStore::~CircuitBreakerStore() { destroy_inner(); }

Micros CircuitBreakerStore::Impl::probe_interval() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(options.probe_interval).count();
}

CircuitBreakerStore::Impl::Call CircuitBreakerStore::Impl::admit_call() {
  if (!open.load(std::memory_order_acquire)) return Call::kNormal;
  const Micros now = clock->now();
  if (now < next_probe.load(std::memory_order_acquire)) return Call::kRefused;
  bool expected = false;  // one probe at a time
  if (!probing.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return Call::kRefused;
  }
  next_probe.store(now + probe_interval(), std::memory_order_release);
  return Call::kProbe;
}

void CircuitBreakerStore::Impl::record(const Error* error, Call call) {
  const bool was_probe = call == Call::kProbe;
  if (was_probe) probing.store(false, std::memory_order_release);
  // Refused input (e.g. a reservation a backend does not keep) says nothing of its health.
  if (error != nullptr && error->code == Errc::kInvalidArgument) return;
  if (error == nullptr || !is_backend_failure(*error)) {
    consecutive_failures.store(0, std::memory_order_release);
    open.store(false, std::memory_order_release);
    return;
  }
  const int failures = consecutive_failures.fetch_add(1, std::memory_order_acq_rel) + 1;
  if ((failures >= options.failures || was_probe) && !open.exchange(true)) {
    next_probe.store(clock->now() + probe_interval(), std::memory_order_release);
  }
}

void CircuitBreakerStore::decide(const StoreRequest& request, AllCallback done) {
  using Call = Impl::Call;
  const Call call = impl_->admit_call();
  if (call == Call::kRefused) {
    return complete_inline(
        done, Result<Decisions>(std::unexpected(circuit_open_error(impl_->options.failures))));
  }
  inner().decide(request,
                 [impl = impl_.get(), call, done = std::move(done)](Result<Decisions> decisions) {
                   impl->record(decisions ? nullptr : &decisions.error(), call);
                   done(std::move(decisions));
                 });
}

Result<void> CircuitBreakerStore::probe() {
  Result<void> answer = inner().probe();
  if (answer) impl_->record(nullptr, Impl::Call::kNormal);
  return answer;
}

bool CircuitBreakerStore::open() const { return impl_->open.load(std::memory_order_acquire); }

bool CircuitBreakerStore::ready() const { return !open() && inner().ready(); }

std::string_view CircuitBreakerStore::status() const {
  return open() ? "circuit_open" : inner().status();
}

}  // namespace spillway
