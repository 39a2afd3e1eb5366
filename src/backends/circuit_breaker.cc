#include "spillway/circuit_breaker.h"

#include <string>

#include "src/core/inline_completion.h"

namespace spillway {
namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_backend_failure(const Error& error) {
  return error.code == Errc::kUnavailable || error.code == Errc::kTimeout;
}

Error circuit_open_error(int failures) {
  return Error{Errc::kUnavailable, "circuit open: the backend failed " + std::to_string(failures) +
                                       " times in a row; probing it again shortly"};
}

}  // namespace

CircuitBreakerStore::CircuitBreakerStore(std::unique_ptr<Store> inner,
                                         CircuitBreakerOptions options)
    : inner_(std::move(inner)), options_(options) {}

CircuitBreakerStore::Call CircuitBreakerStore::admit_call() {
  if (!open_.load(std::memory_order_acquire)) return Call::kNormal;
  const std::int64_t now = steady_ms();
  if (now < next_probe_ms_.load(std::memory_order_acquire)) return Call::kRefused;
  bool expected = false;  // one probe at a time
  if (!probing_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return Call::kRefused;
  }
  next_probe_ms_.store(now + options_.probe_interval.count(), std::memory_order_release);
  return Call::kProbe;
}

void CircuitBreakerStore::record(const Error* error, Call call) {
  const bool was_probe = call == Call::kProbe;
  if (was_probe) probing_.store(false, std::memory_order_release);
  if (error == nullptr || !is_backend_failure(*error)) {
    consecutive_failures_.store(0, std::memory_order_release);
    open_.store(false, std::memory_order_release);
    return;
  }
  const int failures = consecutive_failures_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if ((failures >= options_.failures || was_probe) && !open_.exchange(true)) {
    next_probe_ms_.store(steady_ms() + options_.probe_interval.count(), std::memory_order_release);
  }
}

Result<Decision> CircuitBreakerStore::check(std::string_view key, const Limit& limit,
                                            std::int64_t cost, std::optional<Micros> now) {
  if (Result<void> valid = validate_check(key, cost, now); !valid) {
    return std::unexpected(valid.error());
  }
  const Call call = admit_call();
  if (call == Call::kRefused) return std::unexpected(circuit_open_error(options_.failures));
  Result<Decision> decision = inner_->check(key, limit, cost, now);
  record(decision ? nullptr : &decision.error(), call);
  return decision;
}

void CircuitBreakerStore::check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                                      std::optional<Micros> now, Callback done) {
  if (Result<void> valid = validate_check(key, cost, now); !valid) {
    return complete_inline(done, Result<Decision>(std::unexpected(valid.error())));
  }
  const Call call = admit_call();
  if (call == Call::kRefused) {
    return complete_inline(
        done, Result<Decision>(std::unexpected(circuit_open_error(options_.failures))));
  }
  inner_->check_async(key, limit, cost, now,
                      [this, call, done = std::move(done)](Result<Decision> decision) {
                        record(decision ? nullptr : &decision.error(), call);
                        done(std::move(decision));
                      });
}

Result<Decisions> CircuitBreakerStore::check_all(std::span<const KeyedLimit> checks,
                                                 std::int64_t cost, std::optional<Micros> now) {
  if (Result<void> valid = validate_check_all(checks, cost, now); !valid) {
    return std::unexpected(valid.error());
  }
  const Call call = admit_call();
  if (call == Call::kRefused) return std::unexpected(circuit_open_error(options_.failures));
  Result<Decisions> decisions = inner_->check_all(checks, cost, now);
  record(decisions ? nullptr : &decisions.error(), call);
  return decisions;
}

void CircuitBreakerStore::check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                                          std::optional<Micros> now, AllCallback done) {
  if (Result<void> valid = validate_check_all(checks, cost, now); !valid) {
    return complete_inline(done, Result<Decisions>(std::unexpected(valid.error())));
  }
  const Call call = admit_call();
  if (call == Call::kRefused) {
    return complete_inline(
        done, Result<Decisions>(std::unexpected(circuit_open_error(options_.failures))));
  }
  inner_->check_all_async(checks, cost, now,
                          [this, call, done = std::move(done)](Result<Decisions> decisions) {
                            record(decisions ? nullptr : &decisions.error(), call);
                            done(std::move(decisions));
                          });
}

bool CircuitBreakerStore::ready() const { return !open() && inner_->ready(); }

std::string_view CircuitBreakerStore::status() const {
  return open() ? "circuit_open" : inner_->status();
}

}  // namespace spillway
