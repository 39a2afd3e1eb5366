// A log of lines on stderr, at most one line per interval however often it is fed: an outage
// that fails every request must not flood the log. A line written after some were dropped says
// how many ("(and 41 more since the last line)").
//
// Times: the monotonic clock given (default: the process runtime's), in µs.
// Thread safety: write() from any thread; each line is one write(2), so lines never interleave
// with each other or with other writers (std::cerr is not safe to share across threads under
// the command line's own use of it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spillway/clock.h"
#include "spillway/runtime.h"

namespace spillway {

class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::milliseconds interval = std::chrono::seconds(1),
                          std::shared_ptr<const Clock> monotonic = nullptr)
      : interval_us_(std::chrono::microseconds(interval).count()),
        clock_(monotonic ? std::move(monotonic) : system_runtime()->monotonic_clock()) {}

  // Writes `line` (a newline is added) unless a line was written less than an interval ago.
  // Returns whether it was written.
  bool write(std::string line);

 private:
  const Micros interval_us_;
  const std::shared_ptr<const Clock> clock_;
  std::atomic<Micros> last_us_{INT64_MIN / 2};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace spillway
