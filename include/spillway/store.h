// The interface every backend implements: one atomic check of one key against one Limit.
//
// Thread safety: every Store is safe to call from many threads at once.
// Keys are arbitrary byte strings of 1..kMaxKeyBytes bytes. The state of a key is separate per
// Limit: the same key checked under two different Limits is two independent limiters.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/limit.h"

namespace spillway {

inline constexpr std::size_t kMaxKeyBytes = 1024;

// One layer of an all-or-nothing check: a key under a limit.
struct KeyedLimit {
  std::string_view key;
  const Limit* limit;
};

using Decisions = std::vector<Decision>;

class Store {
 public:
  virtual ~Store() = default;

  // Decides whether `cost` units may pass for `key` now. cost 0 is a peek (reports, changes
  // nothing). `now` (µs) overrides the store's clock; for replay and tests. A denied request
  // changes no state. Invalid input returns Errc::kInvalidArgument and changes nothing.
  virtual Result<Decision> check(std::string_view key, const Limit& limit, std::int64_t cost = 1,
                                 std::optional<Micros> now = std::nullopt) = 0;

  // The same decision delivered to `done` (exactly once, possibly on another thread, possibly
  // before this returns). Backends with network round trips override it to keep many checks in
  // flight; the default decides synchronously. `done` must not block, nor throw.
  // An answer ready at once (the default, an open circuit, invalid input) comes before this
  // returns, except when this thread is already inside such an answer's callback: then it comes
  // right after that callback returns, on this thread, in order. So a caller may issue its next
  // check from inside `done` without growing the stack (src/core/inline_completion.h).
  using Callback = std::function<void(Result<Decision>)>;
  virtual void check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                           std::optional<Micros> now, Callback done);

  // All-or-nothing over several keys (the layers of one request), as one atomic step: `cost` is
  // charged to every key if every key admits it, and to none otherwise. Returns one decision per
  // key, in order. When the request is denied, the keys that denied report their denial and the
  // others report their state as it stands (allowed, remaining uncharged). Keys must be distinct.
  virtual Result<Decisions> check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                      std::optional<Micros> now = std::nullopt) = 0;

  using AllCallback = std::function<void(Result<Decisions>)>;
  // As check_async, for check_all.
  virtual void check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                               std::optional<Micros> now, AllCallback done);

  // Whether the backend can decide now (a network backend: it has a connection). For readiness
  // probes; a check may still fail right after true, and succeed right after false.
  virtual bool ready() const { return true; }

  // Waits up to `timeout` for the backend to become ready() (a network backend: its first
  // connection), e.g. before a server accepts its first request. Returns at once when ready; else
  // the error that says why not (e.g. "connection refused"). Blocks the calling thread: never call
  // it from a callback or an event loop. Default (the in-process store): ready at once. A wrapper
  // passes it on to the store it wraps.
  virtual Result<void> wait_ready(std::chrono::milliseconds timeout) {
    (void)timeout;
    return {};
  }

  // One word for readiness probes and metrics: "ready", "unreachable", or a wrapper's own state
  // (CircuitBreakerStore: "circuit_open").
  virtual std::string_view status() const { return ready() ? "ready" : "unreachable"; }

  // The backend's own metrics, as Prometheus text lines appended to `out` (a wrapper adds its
  // own and its inner store's). Default: none.
  virtual void append_metrics(std::string& out) const { (void)out; }

  // Forgets what a caching wrapper remembers (OverLimitCache), e.g. after a config reload; a
  // wrapper passes it on to the store it wraps. Default: nothing to forget.
  virtual void clear_caches() {}

  // True when check() and check_all() answer at once, without waiting on I/O (the in-process
  // store): a caller on an event loop may then call them directly instead of the async forms.
  virtual bool decides_inline() const { return false; }
};

// True when every decision admitted.
bool all_allowed(const Decisions& decisions);

// Checks the arguments every backend shares (key length, cost range, now range).
Result<void> validate_check(std::string_view key, std::int64_t cost, std::optional<Micros> now);
// The same for check_all: at least one key, every key valid, no key twice.
Result<void> validate_check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                std::optional<Micros> now);

}  // namespace spillway
