// backend.on_error: what the server answers while the backend fails (docs/SPEC.md §5), written
// once here: the values, their spelling (in the config file, /readyz and the logs) and the
// default. Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <string_view>

#include "src/config/choice.h"

namespace spillway::policy {

// kAllow: admitted without a decision; kDeny: 503 (403 to nginx); kLocal: an in-process limiter
// with the same policy decides while the backend fails.
enum class OnError { kAllow, kDeny, kLocal };

// Fail open by default: a backend outage must not become an API outage.
inline constexpr OnError kDefaultOnError = OnError::kAllow;

// The words of backend.on_error (read by read_choice, src/config/yaml_fields.h).
inline constexpr std::array<Choice<OnError>, 3> kOnErrorNames = {{
    {"allow", OnError::kAllow},
    {"deny", OnError::kDeny},
    {"local", OnError::kLocal},
}};

// "allow", "deny" or "local".
constexpr std::string_view on_error_name(OnError on_error) {
  for (const Choice<OnError>& choice : kOnErrorNames) {
    if (choice.value == on_error) return choice.word;
  }
  return "?";
}

}  // namespace spillway::policy
