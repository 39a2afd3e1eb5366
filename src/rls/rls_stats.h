// The counters users of envoyproxy/ratelimit graph, per domain and descriptor path, in hits (a
// request of hits_addend 5 counts 5): total_hits, over_limit, near_limit (admitted with less than
// 20% of the limit left), within_limit, shadow_mode (over the limit under shadow_mode: counted in
// over_limit too, never denied) and over_limit_with_local_cache (denied by the over-limit cache,
// counted in over_limit too). Rendered as Prometheus counters, spillway_rls_<name>_total
// (total_hits as spillway_rls_hits_total):
//   spillway_rls_hits_total{domain="d",descriptor="key_value.key2"} 12
// Label cardinality is bounded: paths come from the rules (the request's values only under
// detailed_metric), and past kMaxSeries distinct paths the rest count under descriptor="_other".
//
// Thread safety: every method from any thread (one mutex; a map lookup per request descriptor).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "src/rls/series_by_path.h"

namespace spillway::rls {

enum class Stat { kTotalHits, kOverLimit, kNearLimit, kWithinLimit, kShadowMode, kLocalCache };
inline constexpr std::size_t kStatCount = 6;

class RlsStats {
 public:
  static constexpr std::size_t kMaxSeries = SeriesByPath<std::uint64_t, kStatCount>::kMaxSeries;

  // Adds `hits` to each stat in `stats` for the path.
  void add(std::string_view domain, std::string_view path, std::initializer_list<Stat> stats,
           std::uint64_t hits);
  std::uint64_t get(std::string_view domain, std::string_view path, Stat stat) const;
  void render(std::string& out) const;

 private:
  SeriesByPath<std::uint64_t, kStatCount> series_;
};

}  // namespace spillway::rls
