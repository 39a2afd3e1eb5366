// Latencies and uptimes measured for metrics and logs. A measurement of real time, not a timer or
// a deadline: it reads the steady clock itself rather than the Runtime (spillway/runtime.h),
// since no test moves a request's duration by hand, and it must cost one clock read.
//
// Units: elapsed() in µs. Thread safety: a value; copies are independent.
#pragma once

#include <chrono>

namespace spillway {

class Stopwatch {
 public:
  Stopwatch() : started_(std::chrono::steady_clock::now()) {}
  void restart() { started_ = std::chrono::steady_clock::now(); }
  std::chrono::microseconds elapsed() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 started_);
  }

 private:
  std::chrono::steady_clock::time_point started_;
};

}  // namespace spillway
