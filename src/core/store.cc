#include "spillway/store.h"

#include <string>

namespace spillway {

Result<void> validate_check(std::string_view key, std::int64_t cost, std::optional<Micros> now) {
  if (key.empty()) return invalid_argument("key must not be empty");
  if (key.size() > kMaxKeyBytes) {
    return invalid_argument("key is " + std::to_string(key.size()) + " bytes; at most " +
                            std::to_string(kMaxKeyBytes) + " are allowed");
  }
  if (cost < 0) return invalid_argument("cost must be 0 or more, got " + std::to_string(cost));
  if (now && (*now < 0 || *now > kMaxNow)) {
    return invalid_argument("now must be between 0 and 2^52 µs, got " + std::to_string(*now));
  }
  return {};
}

Result<void> validate_check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                std::optional<Micros> now) {
  if (checks.empty()) return invalid_argument("check_all needs at least one key");
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (Result<void> valid = validate_check(checks[i].key, cost, now); !valid) return valid;
    for (std::size_t j = 0; j < i; ++j) {
      if (checks[j].key == checks[i].key && *checks[j].limit == *checks[i].limit) {
        return invalid_argument("check_all got the same key twice: \"" +
                                std::string(checks[i].key) + "\"");
      }
    }
  }
  return {};
}

bool all_allowed(const Decisions& decisions) {
  for (const Decision& d : decisions) {
    if (!d.allowed) return false;
  }
  return true;
}

}  // namespace spillway
