// The injected source of `now`, in microseconds. Implementations are thread-safe.
#pragma once

#include <atomic>

#include "spillway/duration.h"

namespace spillway {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Micros now() const = 0;
};

// Wall-clock time in µs since the Unix epoch (CLOCK_REALTIME), so that several processes agree.
class SystemClock final : public Clock {
 public:
  Micros now() const override;
};

// Monotonic time in µs since an arbitrary start (CLOCK_MONOTONIC): for intervals within one
// process (the circuit breaker's probe timer), never for limits that processes share.
class SteadyClock final : public Clock {
 public:
  Micros now() const override;
};

// A clock that moves only when told to; for replay and tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Micros start = 0) : now_(start) {}
  Micros now() const override { return now_.load(std::memory_order_relaxed); }
  void set(Micros t) { now_.store(t, std::memory_order_relaxed); }
  void advance(Micros d) { now_.fetch_add(d, std::memory_order_relaxed); }

 private:
  std::atomic<Micros> now_;
};

}  // namespace spillway
