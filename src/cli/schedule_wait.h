// Waiting for a point on an open-loop schedule (spillway bench, bench/rls_load): sleeps while the
// point is more than 200 µs away, then spins the last ~100 µs, so a check or call leaves within
// a few µs of its time instead of a sleep's ~50-100 µs of wake-up lag.
//
// Units: std::chrono::steady_clock time points. Thread safety: a free function, no state.
#pragma once

#include <chrono>
#include <thread>

namespace spillway::cli {

inline void wait_until(std::chrono::steady_clock::time_point at) {
  using std::chrono::microseconds;
  for (auto now = std::chrono::steady_clock::now(); now < at;
       now = std::chrono::steady_clock::now()) {
    if (at - now > microseconds(200)) std::this_thread::sleep_until(at - microseconds(100));
  }
}

}  // namespace spillway::cli
