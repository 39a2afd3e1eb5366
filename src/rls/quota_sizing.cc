// The sizes of RLQS token-bucket assignments (src/rls/quota_sizing.h). Pure functions;
// thread-safe.
#include "src/rls/quota_sizing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace spillway::rls {

Micros whole_seconds(Micros m) {
  const Micros up = (std::max<Micros>(m, 1) + kMicrosPerSecond - 1) / kMicrosPerSecond;
  return std::min(up * kMicrosPerSecond, kMaxQuotaTtl);
}

Micros ttl_for(Micros interval) {
  if (interval <= 0) return kFirstQuotaTtl;
  const Micros i = std::min(interval, kMaxQuotaTtl);
  return whole_seconds(i + std::max<Micros>(i / 2, 600'000));
}

Micros first_ttl(const Limit& limit, Micros fill) {
  const std::int64_t largest = limit.capacity();
  Micros ttl = kFirstQuotaTtl;
  while (ttl > 2 * kMicrosPerSecond &&
         QuotaCost{.ttl = ttl, .fill = fill, .span = ttl + kQuotaGrace}.of_new(1) > largest / 16) {
    ttl = std::max<Micros>(2 * kMicrosPerSecond, ttl / 2 / kMicrosPerSecond * kMicrosPerSecond);
  }
  return ttl;
}

QuotaSizing sizing_for(const Limit& limit, Micros ttl, Micros fill) {
  const double f = static_cast<double>(fill);
  QuotaSizing out;
  out.rate = std::max(1.0, std::floor(static_cast<double>(limit.limit()) * f /
                                      static_cast<double>(limit.period())));
  const std::int64_t largest = limit.capacity();
  const QuotaCost cost{.ttl = ttl, .fill = fill, .span = ttl + kQuotaGrace};
  out.most =
      std::max(1.0, std::min({out.rate, static_cast<double>(cost.fit(largest)),
                              static_cast<double>(std::numeric_limits<std::uint32_t>::max())}));
  out.start = std::clamp(static_cast<double>(cost.fit(largest / 16)), 1.0, out.most);
  return out;
}

double max_min_share(double capacity, const std::vector<std::int64_t>& demands, double unknown) {
  if (demands.empty()) return unknown;
  const auto asked = [capacity](std::int64_t d) {
    return d < 0 ? capacity : static_cast<double>(d);
  };
  std::vector<double> sorted;
  sorted.reserve(demands.size());
  for (std::int64_t d : demands) sorted.push_back(asked(d));
  std::sort(sorted.begin(), sorted.end());
  double left = capacity;
  double level = capacity;  // what a member asking more than its share gets
  std::size_t i = 0;
  for (; i < sorted.size(); ++i) {
    level = left / static_cast<double>(sorted.size() - i);
    if (sorted[i] >= level) break;
    left -= sorted[i];
  }
  const double spare = i == sorted.size() ? left / static_cast<double>(sorted.size()) : 0;
  const double own = asked(demands[0]);
  if (demands[0] < 0) return std::min(unknown, level);
  return std::min(own * 1.25, std::min(own, level) + spare);
}

}  // namespace spillway::rls
