// An RLQS Envoy's demand measured over a window of reports (src/rls/quota_demand.h).
#include "src/rls/quota_demand.h"

#include <gtest/gtest.h>

namespace spillway::rls {
namespace {

TEST(DemandWindow, UnknownUntilAReportCoversSomeTime) {
  DemandWindow d;
  EXPECT_EQ(d.add(5, 0, kMicrosPerSecond), -1);  // Envoy's first report: no time covered
  EXPECT_EQ(d.add(0, 0, kMicrosPerSecond), -1);
  EXPECT_EQ(d.add(5, 250'000, kMicrosPerSecond),
            20);  // 5 over 250 ms (the first 5 covered no time)
}

TEST(DemandWindow, ReportsUnderTheWindowAddUpBeforeTheNextMeasure) {
  DemandWindow d;
  EXPECT_EQ(d.add(4, 250'000, kMicrosPerSecond), 16);  // the first measure: at once
  // 6, 5 and 5 more (counting noise around 20/s) keep the first measure until 1 s is covered.
  EXPECT_EQ(d.add(6, 250'000, kMicrosPerSecond), 16);
  EXPECT_EQ(d.add(5, 250'000, kMicrosPerSecond), 16);
  EXPECT_EQ(d.add(5, 250'000, kMicrosPerSecond), 20);  // 20 requests over 1 s
  // The window starts again: one report of a whole window measures alone.
  EXPECT_EQ(d.add(30, 1'500'000, kMicrosPerSecond), 20);
  EXPECT_EQ(d.add(7, 250'000, kMicrosPerSecond), 20);
}

TEST(DemandWindow, ScalesToTheFillIntervalAndIsAtLeastOne) {
  DemandWindow d;
  EXPECT_EQ(d.add(10, 2 * kMicrosPerSecond, 60 * kMicrosPerSecond), 300);  // 5/s over a 60 s fill
  DemandWindow quiet;
  EXPECT_EQ(quiet.add(0, 2 * kMicrosPerSecond, kMicrosPerSecond), 1);
}

TEST(DemandWindow, HugeCountsSaturateInsteadOfWrapping) {
  DemandWindow d;
  const std::int64_t most = d.add(~0ULL, kMicrosPerSecond, 86'400 * kMicrosPerSecond);
  EXPECT_GT(most, 0);
  EXPECT_LE(most, 1'000'000'000'000'000);
  EXPECT_EQ(d.add(~0ULL, kMicrosPerSecond, 86'400 * kMicrosPerSecond), most);
}

}  // namespace
}  // namespace spillway::rls
