#include "src/server/stats.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "src/core/json_writer.h"
#include "src/core/text.h"
#include "src/policy/keys.h"

namespace spillway::server {
namespace {

std::string masked(std::string_view value, std::uint64_t salt) {
  // FNV-1a over the salt, then the value: without the salt (random per process) a masked value
  // cannot be found by hashing guesses.
  std::uint64_t hash = 14695981039346656037ull;
  for (int i = 0; i < 8; ++i) hash = (hash ^ ((salt >> (8 * i)) & 0xff)) * 1099511628211ull;
  for (unsigned char c : value) hash = (hash ^ c) * 1099511628211ull;
  hash ^= hash >> 32;
  std::string out;
  const std::size_t keep = std::min<std::size_t>(3, value.size() / 4);
  for (std::size_t i = 0; i < keep && static_cast<unsigned char>(value[i]) >= 0x20 &&
                          static_cast<unsigned char>(value[i]) < 0x7f;
       ++i) {
    out += value[i];
  }
  char tail[16];
  std::snprintf(tail, sizeof tail, "***#%04x",
                static_cast<unsigned>((hash ^ (hash >> 16)) & 0xffff));
  return out + tail;
}

}  // namespace

std::pair<std::string, std::string> display_key(std::string_view stored, bool mask,
                                                std::uint64_t salt) {
  // In clear, a value's bytes that are not UTF-8 are written as \xNN: the JSON stays valid.
  const auto show = [mask, salt](std::string_view value) {
    return mask ? masked(value, salt) : utf8_or_escaped(value);
  };
  if (stored.starts_with(policy::kLimitEndpointPrefix)) {
    return {"limit", show(stored.substr(policy::kLimitEndpointPrefix.size()))};
  }
  const auto parts = policy::parse_layer_key(stored);
  if (!parts) return {std::string(stored.substr(0, stored.find(':'))), show(stored)};
  std::string shown;
  for (std::string_view value : parts->values) {
    if (!shown.empty()) shown += " | ";
    shown += show(value);
  }
  return {std::string(parts->layer), shown};
}

std::string iso8601_utc(std::int64_t unix_seconds) {
  const std::time_t time = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Doubles are written as people write them (JsonWriter::plain: "12.2", "0.0005", never the
// exponent boost::json::serialize would write).
std::string stats_json(const StatsView& view) {
  const Metrics::Snapshot& m = *view.metrics;
  std::string text;
  text.reserve(1024);
  JsonWriter json(text);
  json.begin_object()
      .member("version", view.version)
      .key("uptime_s")
      .plain(view.uptime_s)
      .member("now_unix_ms", view.now_unix_ms)
      .member("total_decisions", m.outcomes[0] + m.outcomes[1])
      .member("allowed_decisions", m.outcomes[1])
      .member("denied_decisions", m.outcomes[0])
      .key("decisions")
      .begin_array();
  for (const auto& [layer, counts] : m.decisions) {
    json.begin_object()
        .member("layer", layer)
        .member("allowed", counts[1])
        .member("denied", counts[0])
        .member("shadow_denied", counts[2])
        .end_object();
  }
  json.end_array().key("top_denied").begin_array();
  for (const TopKeys::Entry& entry : view.top_denied) {
    auto [layer, key] = display_key(entry.key, view.mask_keys, view.mask_salt);
    json.begin_object().member("layer", layer).member("key", key);
    if (entry.plan.empty()) {
      json.null_member("plan");
    } else {
      json.member("plan", entry.plan);
    }
    json.member("count", entry.count).member("error", entry.error).end_object();
  }
  json.end_array().member("top_denied_masked", view.mask_keys);
  std::uint64_t errors = 0;
  for (const auto& [kind, count] : m.backend_errors) errors += count;
  const auto millis = [&json](JsonKey name, Micros micros) {
    json.key(name);
    if (micros < 0) {
      json.null();
    } else {
      json.plain(static_cast<double>(micros) / 1000);
    }
  };
  json.key("backend")
      .begin_object()
      .member("kind", view.backend_kind)
      .member("status", view.backend_status)
      .member("up", view.backend_up)
      .member("errors", errors)
      .key("latency_ms")
      .begin_object();
  millis("p50", m.decision_latency.quantile(0.5));
  millis("p99", m.decision_latency.quantile(0.99));
  json.end_object().end_object();
  json.key("config")
      .begin_object()
      .member("version", view.config_version)
      .member("loaded_at", view.config_loaded_at)
      .key("layers")
      .begin_array();
  for (const auto& [name, mode] : view.layers) {
    json.begin_object().member("name", name).member("mode", mode).end_object();
  }
  json.end_array().end_object().end_object();
  return text;
}

}  // namespace spillway::server
