// GET /v1/stats (docs/SPEC.md §5): what the dashboard shows, as one JSON object — counters since
// start (decisions by layer and outcome, answers, backend errors), answer-time quantiles, the
// most denied keys (masked unless server.dashboard_keys is clear), the backend's state, the
// config's version and load time, and the server's wall clock (the dashboard's time axis). Pure
// functions; thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/server/metrics.h"
#include "src/server/top_keys.h"

namespace spillway::server {

struct StatsView {
  const Metrics::Snapshot* metrics = nullptr;
  std::vector<TopKeys::Entry> top_denied;
  bool mask_keys = true;
  std::uint64_t mask_salt = 0;       // random per process: masked values hash with it
  std::string_view backend_kind;     // "memory", "redis", "redis+cluster", …
  std::string_view backend_status;   // Store::status()
  bool backend_up = true;            // Store::ready()
  std::uint64_t config_version = 0;  // 0 at start, +1 per reload
  std::string config_loaded_at;      // ISO 8601, UTC
  std::vector<std::pair<std::string, std::string>> layers;  // name, "enforce" or "shadow"
  double uptime_s = 0;           // since the server started, on the monotonic clock
  std::int64_t now_unix_ms = 0;  // the wall clock when read: ms since the Unix epoch, UTC
  std::string_view version;      // spillway's
};

std::string stats_json(const StatsView& view);

// A stored key as people read it: its layer ("limit" for POST /v1/limit) and its values joined
// by " | ". Masked, each value keeps its first quarter, rounded down (3 printable ASCII
// characters at most: nothing of a value under 4 bytes), then "***#" and 4 hex digits of a hash
// of `salt` and the value (distinct keys stay distinct on the page; guesses cannot be checked
// without the salt). In clear, bytes that are not UTF-8 are written as \xNN.
std::pair<std::string, std::string> display_key(std::string_view stored_key, bool mask,
                                                std::uint64_t salt = 0);

// "2026-12-01T16:40:00Z"
std::string iso8601_utc(std::int64_t unix_seconds);

}  // namespace spillway::server
