// backend.on_error: what the server answers while the backend fails (docs/SPEC.md §5), written
// once here: the values, their spelling (in the config file, /readyz and the logs) and the
// default. Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace spillway::policy {

// kAllow: admitted without a decision; kDeny: 503 (403 to nginx); kLocal: an in-process limiter
// with the same policy decides while the backend fails.
enum class OnError { kAllow, kDeny, kLocal };

// Fail open by default: a backend outage must not become an API outage.
inline constexpr OnError kDefaultOnError = OnError::kAllow;

inline constexpr std::array<std::pair<std::string_view, OnError>, 3> kOnErrorNames = {{
    {"allow", OnError::kAllow},
    {"deny", OnError::kDeny},
    {"local", OnError::kLocal},
}};

// "allow", "deny" or "local".
constexpr std::string_view on_error_name(OnError on_error) {
  for (const auto& [name, value] : kOnErrorNames) {
    if (value == on_error) return name;
  }
  return "?";
}

// The value a config spells `text`; nullopt for any other word.
constexpr std::optional<OnError> parse_on_error(std::string_view text) {
  for (const auto& [name, value] : kOnErrorNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace spillway::policy
