#include "src/core/rate_limited_log.h"

#include <unistd.h>

namespace spillway {

bool RateLimitedLog::write(std::string line) {
  const Micros now = clock_->now();
  Micros last = last_us_.load(std::memory_order_relaxed);
  if (now - last < interval_us_ ||
      !last_us_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (const std::uint64_t more = dropped_.exchange(0, std::memory_order_relaxed); more > 0) {
    line.append(" (and ").append(std::to_string(more)).append(" more since the last line)");
  }
  line.push_back('\n');
  const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
  (void)written;
  return true;
}

}  // namespace spillway
