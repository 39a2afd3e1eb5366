// The one polling helper of the tests: waits for a condition instead of sleeping a fixed time.
//
// wait_until(condition, timeout) calls `condition` until it returns true or `timeout` has
// passed, and returns its last answer (one more call after the deadline, so a condition that
// came true during the last pause is not reported as false). The pause between calls starts at
// 1 ms and doubles up to 25 ms: a condition that is already true costs one call, one that takes
// seconds costs 40 calls a second. Units: std::chrono durations (default 5 s).
//
// Thread safety: calls `condition` on the calling thread only; the condition itself must be
// safe to call while other threads change what it reads (atomics, a mutex).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace spillway::testing {

inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds pause(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(pause);  // real time: what is polled runs on it
    pause = std::min(pause * 2, std::chrono::milliseconds(25));
  }
  return condition();
}

}  // namespace spillway::testing
