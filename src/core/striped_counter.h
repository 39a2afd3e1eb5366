// A counter that many threads add to on a hot path without sharing a cache line: kStripes
// padded relaxed atomics, a thread adding to the stripe of its own (given out round robin as
// threads first add), read by summing them all. A read while adds are under way sees some of
// them and not others; a read after they are done sees them all. For metrics and totals, never
// for a decision.
//
// Thread safety: add() and sum() from any thread. Memory: kStripes cache lines.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spillway::core {

class StripedCounter {
 public:
  void add(std::int64_t delta) {
    stripes_[stripe()].value.fetch_add(delta, std::memory_order_relaxed);
  }
  std::int64_t sum() const {
    std::int64_t total = 0;
    for (const Stripe& s : stripes_) total += s.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  static constexpr std::size_t kStripes = 16;
  struct alignas(64) Stripe {
    std::atomic<std::int64_t> value{0};
  };
  // This thread's stripe: the same for every counter, so a thread touches one line per counter.
  static std::size_t stripe() {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return mine;
  }
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace spillway::core
