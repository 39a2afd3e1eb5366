// LatencyHistogram (spillway bench's latencies): a percentile read back is never below the exact
// one and at most 1/64 above it, the largest value is exact, and merging is recording both.
#include "src/cli/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace spillway::cli {
namespace {

// The exact q-quantile as the histogram defines it: the ceil(q * n)-th smallest value.
std::uint64_t exact(const std::vector<std::uint64_t>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

TEST(LatencyHistogram, EmptyReadsZero) {
  const LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.at(0.5), 0u);
  EXPECT_EQ(h.max(), 0u);
}

TEST(LatencyHistogram, PercentilesAreWithinOneSixtyFourthAboveTheExactOnes) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 20; ++round) {
    // From a few ns to tens of seconds, log-uniform: every bucket range gets values.
    std::uniform_real_distribution<double> exponent(0, 35);
    const std::size_t n = 1 + random() % 5000;
    std::vector<std::uint64_t> values;
    LatencyHistogram h;
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::uint64_t>(std::exp2(exponent(random)));
      values.push_back(v);
      h.record(static_cast<std::int64_t>(v));
    }
    std::sort(values.begin(), values.end());
    EXPECT_EQ(h.count(), n);
    EXPECT_EQ(h.max(), values.back());
    for (double q : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
      const std::uint64_t want = exact(values, q);
      const std::uint64_t got = h.at(q);
      EXPECT_GE(got, want) << "q=" << q << " n=" << n;
      EXPECT_LE(got, want + want / 64 + 1) << "q=" << q << " n=" << n;
    }
  }
}

TEST(LatencyHistogram, SmallValuesAreExactAndNegativeOnesCountAsZero) {
  LatencyHistogram h;
  for (int v = 0; v < 128; ++v) h.record(v);
  h.record(-5);
  EXPECT_EQ(h.count(), 129u);
  EXPECT_EQ(h.at(0.0), 0u);
  EXPECT_EQ(h.at(0.5), 63u);
  EXPECT_EQ(h.at(1.0), 127u);
}

TEST(LatencyHistogram, MergingIsRecordingBoth) {
  LatencyHistogram a, b, both;
  for (std::int64_t v = 1; v < 100'000; v = v * 3 + 1) {
    a.record(v);
    both.record(v);
    b.record(v * 7);
    both.record(v * 7);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.max(), both.max());
  for (double q : {0.25, 0.5, 0.75, 0.99}) EXPECT_EQ(a.at(q), both.at(q)) << q;
}

}  // namespace
}  // namespace spillway::cli
