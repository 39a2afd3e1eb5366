// Latencies in nanoseconds, counted in log-linear buckets (spillway bench): 64 buckets per power
// of two above 128 ns, exact below, so a percentile read back is within 1/64 (1.6 %) of the value
// recorded, and recording is an increment (no allocation: a bench records tens of millions).
// The largest value is kept exactly.
//
// Thread safety: none; one per thread, merged after the threads have stopped.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace spillway::cli {

class LatencyHistogram {
 public:
  void record(std::int64_t ns) {
    const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0));
    ++counts_[index_of(v)];
    ++total_;
    max_ = std::max(max_, v);
  }

  void merge(const LatencyHistogram& other) {
    for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    max_ = std::max(max_, other.max_);
  }

  std::uint64_t count() const { return total_; }
  std::uint64_t max() const { return max_; }

  // The value at quantile q (0..1): the smallest bucket holding at least q of the samples, read
  // as that bucket's upper end (so a percentile is never reported lower than it was), at most the
  // largest value recorded; 0 when nothing was recorded.
  std::uint64_t at(double q) const {
    if (total_ == 0) return 0;
    const double wanted = std::clamp(q, 0.0, 1.0) * static_cast<double>(total_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen > 0 && static_cast<double>(seen) >= wanted) return std::min(upper_of(i), max_);
    }
    return max_;
  }

 private:
  static constexpr int kSubBits = 6;                        // 64 buckets per power of two
  static constexpr std::uint64_t kLinear = 2u << kSubBits;  // 0..127 ns: one bucket per ns
  static constexpr std::size_t kBuckets = kLinear + 64 * (64 - kSubBits - 1);

  static std::size_t index_of(std::uint64_t v) {
    if (v < kLinear) return static_cast<std::size_t>(v);
    const int shift = std::bit_width(v) - kSubBits - 1;                       // >= 1
    const std::uint64_t sub = (v >> shift) - (std::uint64_t{1} << kSubBits);  // 0..63
    return static_cast<std::size_t>(kLinear + 64 * static_cast<std::uint64_t>(shift - 1) + sub);
  }

  static std::uint64_t upper_of(std::size_t index) {
    if (index < kLinear) return index;
    const std::uint64_t shift = (index - kLinear) / 64 + 1;
    const std::uint64_t sub = (index - kLinear) % 64 + (std::uint64_t{1} << kSubBits);
    return ((sub + 1) << shift) - 1;
  }

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace spillway::cli
