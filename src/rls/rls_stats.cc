#include "src/rls/rls_stats.h"

#include <array>

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

}  // namespace

void RlsStats::add(std::string_view domain, std::string_view path,
                   std::initializer_list<Stat> stats, std::uint64_t hits) {
  series_.update(domain, path, [&](auto& counters) {
    for (Stat stat : stats) counters[static_cast<std::size_t>(stat)] += hits;
  });
}

std::uint64_t RlsStats::get(std::string_view domain, std::string_view path, Stat stat) const {
  return series_.get(domain, path, static_cast<std::size_t>(stat));
}

void RlsStats::render(std::string& out) const {
  if (series_.empty()) return;
  for (std::size_t s = 0; s < kStatCount; ++s) {
    const std::string name = "spillway_rls_" + std::string(kNames[s]);
    append_metric_family(out, name, MetricType::kCounter, kHelp[s]);
    series_.for_each([&](std::string_view domain, std::string_view path, const auto& counters) {
      append_metric_sample(out, name, {{"domain", domain}, {"descriptor", path}}, counters[s]);
    });
  }
}

}  // namespace spillway::rls
