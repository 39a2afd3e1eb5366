// Copies of an all-or-nothing check's keys and limits, for a callback that runs after the
// caller's span is gone (a wrapper store that acts on the backend's answer). Plain value; build
// it once, then share it (it is not copyable: `checks` points into the other two).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "spillway/store.h"

namespace spillway {

struct OwnedChecks {
  explicit OwnedChecks(std::span<const KeyedLimit> from) {
    keys.reserve(from.size());
    limits.reserve(from.size());
    for (const KeyedLimit& c : from) {
      keys.emplace_back(c.key);
      limits.push_back(*c.limit);
    }
    checks.reserve(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) checks.push_back({keys[i], &limits[i]});
  }
  OwnedChecks(const OwnedChecks&) = delete;
  OwnedChecks& operator=(const OwnedChecks&) = delete;

  std::vector<std::string> keys;
  std::vector<Limit> limits;
  std::vector<KeyedLimit> checks;  // keys[i] under limits[i]
};

}  // namespace spillway
