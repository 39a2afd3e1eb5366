#include "src/rls/rls_stats.h"

#include "src/core/metrics_text.h"

namespace spillway::rls {
namespace {

constexpr std::array<std::string_view, kStatCount> kNames = {
    "hits_total",         "over_limit_total",  "near_limit_total",
    "within_limit_total", "shadow_mode_total", "over_limit_with_local_cache_total"};
constexpr std::array<std::string_view, kStatCount> kHelp = {
    "Hits (hits_addend) checked against a rule.",
    "Hits over the limit (shadow_mode and local-cache denials included).",
    "Hits admitted with less than 20% of the limit left.",
    "Hits admitted.",
    "Hits over the limit of a shadow_mode rule (admitted).",
    "Hits denied by the local over-limit cache without a backend call."};

std::string series_id(std::string_view domain, std::string_view path) {
  std::string id(domain);
  id += '\0';
  id += path;
  return id;
}

}  // namespace

void RlsStats::add(std::string_view domain, std::string_view path,
                   std::initializer_list<Stat> stats, std::uint64_t hits) {
  std::lock_guard lock(mutex_);
  std::string id = series_id(domain, path);
  auto it = series_.find(id);
  if (it == series_.end()) {
    if (series_.size() >= kMaxSeries) id = series_id(domain, "_other");
    it = series_.try_emplace(std::move(id)).first;
  }
  for (Stat stat : stats) it->second[static_cast<std::size_t>(stat)] += hits;
}

std::uint64_t RlsStats::get(std::string_view domain, std::string_view path, Stat stat) const {
  std::lock_guard lock(mutex_);
  auto it = series_.find(series_id(domain, path));
  return it == series_.end() ? 0 : it->second[static_cast<std::size_t>(stat)];
}

void RlsStats::render(std::string& out) const {
  std::lock_guard lock(mutex_);
  if (series_.empty()) return;
  for (std::size_t s = 0; s < kStatCount; ++s) {
    const std::string name = "spillway_rls_" + std::string(kNames[s]);
    append_metric_family(out, name, MetricType::kCounter, kHelp[s]);
    for (const auto& [id, values] : series_) {
      const std::size_t split = id.find('\0');
      append_metric_sample(out, name,
                           {{"domain", std::string_view(id).substr(0, split)},
                            {"descriptor", std::string_view(id).substr(split + 1)}},
                           values[s]);
    }
  }
}

}  // namespace spillway::rls
