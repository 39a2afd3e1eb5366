#include "src/server/stats.h"

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "src/core/decimal.h"
#include "src/policy/keys.h"
#include "src/server/json_text.h"

namespace spillway::server {
namespace json = boost::json;
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

// A JSON number as people write it: integers as they are, other numbers in plain decimals, the
// shortest that reads back the same ("12.2", "0.0005"), never an exponent ("1.22E1", which
// boost::json::serialize writes); a number that is not finite is null.
void append_plain_number(std::string& out, double number) {
  if (!std::isfinite(number)) {
    out.append("null");
    return;
  }
  char text[400];  // the longest shortest fixed spelling of a double is 327 characters
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, number, std::chars_format::fixed);
  out.append(error == std::errc{} ? std::string_view(text, end) : std::string_view("null"));
}

// json::serialize, but with append_plain_number for doubles.
void append_json(std::string& out, const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      out.append("null");
      return;
    case json::kind::bool_:
      out.append(value.get_bool() ? "true" : "false");
      return;
    case json::kind::int64:
      append_decimal(out, value.get_int64());
      return;
    case json::kind::uint64:
      append_decimal(out, value.get_uint64());
      return;
    case json::kind::double_:
      append_plain_number(out, value.get_double());
      return;
    case json::kind::string:
      append_json_string(out, value.get_string());
      return;
    case json::kind::array: {
      out.push_back('[');
      const char* separator = "";
      for (const json::value& item : value.get_array()) {
        out.append(separator);
        append_json(out, item);
        separator = ",";
      }
      out.push_back(']');
      return;
    }
    case json::kind::object: {
      out.push_back('{');
      const char* separator = "";
      for (const json::key_value_pair& member : value.get_object()) {
        out.append(separator);
        append_json_string(out, member.key());
        out.push_back(':');
        append_json(out, member.value());
        separator = ",";
      }
      out.push_back('}');
      return;
    }
  }
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

std::string stats_json(const StatsView& view) {
  const Metrics::Snapshot& m = *view.metrics;
  json::object out;
  out["version"] = view.version;
  out["uptime_s"] = view.uptime_s;
  out["now_unix_ms"] = view.now_unix_ms;
  out["total_decisions"] = m.outcomes[0] + m.outcomes[1];
  out["allowed_decisions"] = m.outcomes[1];
  out["denied_decisions"] = m.outcomes[0];
  json::array decisions;
  for (const auto& [layer, counts] : m.decisions) {
    decisions.push_back(json::object{{"layer", layer},
                                     {"allowed", counts[1]},
                                     {"denied", counts[0]},
                                     {"shadow_denied", counts[2]}});
  }
  out["decisions"] = std::move(decisions);
  json::array top;
  for (const TopKeys::Entry& entry : view.top_denied) {
    auto [layer, key] = display_key(entry.key, view.mask_keys, view.mask_salt);
    top.push_back(
        json::object{{"layer", layer},
                     {"key", key},
                     {"plan", entry.plan.empty() ? json::value(nullptr) : json::value(entry.plan)},
                     {"count", entry.count},
                     {"error", entry.error}});
  }
  out["top_denied"] = std::move(top);
  out["top_denied_masked"] = view.mask_keys;
  std::uint64_t errors = 0;
  for (const auto& [kind, count] : m.backend_errors) errors += count;
  const auto millis = [](Micros micros) {
    return micros < 0 ? json::value(nullptr) : json::value(static_cast<double>(micros) / 1000);
  };
  out["backend"] = json::object{
      {"kind", view.backend_kind},
      {"status", view.backend_status},
      {"up", view.backend_up},
      {"errors", errors},
      {"latency_ms", json::object{{"p50", millis(m.decision_latency.quantile(0.5))},
                                  {"p99", millis(m.decision_latency.quantile(0.99))}}},
  };
  json::array layers;
  for (const auto& [name, mode] : view.layers) {
    layers.push_back(json::object{{"name", name}, {"mode", mode}});
  }
  out["config"] = json::object{{"version", view.config_version},
                               {"loaded_at", view.config_loaded_at},
                               {"layers", std::move(layers)}};
  std::string text;
  text.reserve(1024);
  append_json(text, out);
  return text;
}

}  // namespace spillway::server
