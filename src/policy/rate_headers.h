// The rate limit headers of a decision, written once for every front end: `<prefix>Limit`,
// `<prefix>Remaining` and `<prefix>Reset` (whole seconds, rounded up), then `Retry-After` (whole
// seconds, rounded up) when a wait is given. The HTTP endpoints write them with the X-RateLimit-
// prefix; Envoy's RLS with the one rls.response_headers names. Names are string literals (static
// storage). Units: counts in the limit's units, durations in microseconds. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/duration.h"

namespace spillway::policy {

enum class RateHeaderNames : std::uint8_t { kXRateLimit, kDraft };  // X-RateLimit-*, RateLimit-*

// Whole seconds, rounded up; 0 for a duration not above 0.
constexpr std::int64_t header_seconds(Micros d) {
  return d <= 0 ? 0 : ceil_to_unit(d, kMicrosPerSecond);
}

// Calls add(name, value) for each header, in order.
template <class Add>
void add_rate_headers(RateHeaderNames names, std::int64_t limit, std::int64_t remaining,
                      Micros reset, std::optional<Micros> retry_after, Add&& add) {
  const bool x = names == RateHeaderNames::kXRateLimit;
  add(std::string_view(x ? "X-RateLimit-Limit" : "RateLimit-Limit"), std::to_string(limit));
  add(std::string_view(x ? "X-RateLimit-Remaining" : "RateLimit-Remaining"),
      std::to_string(remaining));
  add(std::string_view(x ? "X-RateLimit-Reset" : "RateLimit-Reset"),
      std::to_string(header_seconds(reset)));
  if (retry_after) {
    add(std::string_view("Retry-After"), std::to_string(header_seconds(*retry_after)));
  }
}

}  // namespace spillway::policy
