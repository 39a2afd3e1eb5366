// An RLQS Envoy's demand over a window of reports (src/rls/quota_demand.h).
#include "src/rls/quota_demand.h"

#include <algorithm>
#include <cmath>

namespace spillway::rls {

std::int64_t DemandWindow::add(std::uint64_t requests, Micros gap, Micros fill) {
  if (gap <= 0) return last_;
  seen_ =
      std::min<std::uint64_t>(seen_ + std::min<std::uint64_t>(requests, 1ULL << 53), 1ULL << 60);
  gap_ += gap;
  if (last_ >= 0 && gap_ < kDemandWindow) return last_;
  const double want =
      std::ceil(static_cast<double>(seen_) * static_cast<double>(fill) / static_cast<double>(gap_));
  last_ = static_cast<std::int64_t>(std::clamp(want, 1.0, 1e15));
  if (gap_ >= kDemandWindow) {
    seen_ = 0;
    gap_ = 0;
  }
  return last_;
}

}  // namespace spillway::rls
