// RateLimitedLog: at most one line per interval on its monotonic clock, and a count of the lines
// dropped in between. The lines go to stderr; the test reads write()'s answers.
#include "src/core/rate_limited_log.h"

#include <gtest/gtest.h>

#include <memory>

#include "spillway/clock.h"

namespace spillway {
namespace {

TEST(RateLimitedLog, WritesOneLinePerIntervalOnItsClock) {
  auto clock = std::make_shared<ManualClock>(5'000'000);
  RateLimitedLog log(std::chrono::seconds(1), clock);
  EXPECT_TRUE(log.write("rate_limited_log_test: first"));
  EXPECT_FALSE(log.write("rate_limited_log_test: dropped"));
  clock->advance(999'999);
  EXPECT_FALSE(log.write("rate_limited_log_test: dropped"));
  clock->advance(1);
  EXPECT_TRUE(log.write("rate_limited_log_test: second, after two dropped"));
  EXPECT_FALSE(log.write("rate_limited_log_test: dropped"));
}

}  // namespace
}  // namespace spillway
