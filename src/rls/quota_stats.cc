// The RLQS counters of QuotaStats (src/rls/quota_engine.h): tokens assigned, used and refunded,
// and the Envoys holding each bucket, by domain and the rules' stat path, bounded at kMaxSeries
// series; rendered through the one metrics writer (src/core/metrics_text.h) as
// spillway_rlqs_tokens_total{domain,bucket,kind} and spillway_rlqs_envoys{domain,bucket}.
// Thread safety: any thread (one mutex).
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "src/core/metrics_text.h"
#include "src/rls/quota_engine.h"

namespace spillway::rls {

void QuotaStats::add(std::string_view domain, std::string_view path, Counter counter,
                     std::int64_t n) {
  if (path.empty() || n == 0) return;
  series_.update(domain, path, [&](auto& counters) { counters[counter] += n; });
}

std::int64_t QuotaStats::get(std::string_view domain, std::string_view path,
                             Counter counter) const {
  return series_.get(domain, path, counter);
}

void QuotaStats::render(std::string& out) const {
  if (series_.empty()) return;
  append_metric_family(out, "spillway_rlqs_tokens_total", MetricType::kCounter,
                       "RLQS tokens per bucket: assigned (charged for assignments), used (allowed, "
                       "as the Envoys report), refunded (given back by settlements).");
  static constexpr std::array<std::string_view, 3> kinds = {"assigned", "used", "refunded"};
  series_.for_each([&](std::string_view domain, std::string_view bucket, const auto& values) {
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      append_metric_sample(out, "spillway_rlqs_tokens_total",
                           {{"domain", domain}, {"bucket", bucket}, {"kind", kinds[k]}},
                           static_cast<std::uint64_t>(std::max<std::int64_t>(0, values[k])));
    }
  });
  append_metric_family(out, "spillway_rlqs_envoys", MetricType::kGauge,
                       "RLQS streams (Envoys) holding a bucket on this server.");
  series_.for_each([&](std::string_view domain, std::string_view bucket, const auto& values) {
    append_metric_sample(out, "spillway_rlqs_envoys", {{"domain", domain}, {"bucket", bucket}},
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, values[kHolders])));
  });
}

}  // namespace spillway::rls
