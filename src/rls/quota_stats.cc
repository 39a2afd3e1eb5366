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
  std::string name = std::string(domain) + '\0' + std::string(path);
  std::lock_guard lock(mutex_);
  auto found = series_.find(name);
  if (found == series_.end()) {
    if (series_.size() >= kMaxSeries) name = std::string(domain) + '\0' + "_other";
    found = series_.try_emplace(std::move(name)).first;
  }
  found->second[counter] += n;
}

std::int64_t QuotaStats::get(std::string_view domain, std::string_view path,
                             Counter counter) const {
  const std::string name = std::string(domain) + '\0' + std::string(path);
  std::lock_guard lock(mutex_);
  auto found = series_.find(name);
  return found == series_.end() ? 0 : found->second[counter];
}

void QuotaStats::render(std::string& out) const {
  std::lock_guard lock(mutex_);
  if (series_.empty()) return;
  const auto domain = [](const std::string& name) {
    return std::string_view(name).substr(0, name.find('\0'));
  };
  const auto bucket = [](const std::string& name) {
    return std::string_view(name).substr(name.find('\0') + 1);
  };
  append_metric_family(out, "spillway_rlqs_tokens_total", MetricType::kCounter,
                       "RLQS tokens per bucket: assigned (charged for assignments), used (allowed, "
                       "as the Envoys report), refunded (given back by settlements).");
  static constexpr std::array<std::string_view, 3> kinds = {"assigned", "used", "refunded"};
  for (const auto& [name, values] : series_) {
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      append_metric_sample(out, "spillway_rlqs_tokens_total",
                           {{"domain", domain(name)}, {"bucket", bucket(name)}, {"kind", kinds[k]}},
                           static_cast<std::uint64_t>(std::max<std::int64_t>(0, values[k])));
    }
  }
  append_metric_family(out, "spillway_rlqs_envoys", MetricType::kGauge,
                       "RLQS streams (Envoys) holding a bucket on this server.");
  for (const auto& [name, values] : series_) {
    append_metric_sample(out, "spillway_rlqs_envoys",
                         {{"domain", domain(name)}, {"bucket", bucket(name)}},
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, values[kHolders])));
  }
}

}  // namespace spillway::rls
