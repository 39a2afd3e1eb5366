// A copy of a StoreRequest with its own keys and limits, for a callback that runs after the
// caller's request is gone (a wrapper store that acts on the backend's answer, or asks another
// store with the same request then). Plain value; build it once, then share it (it is not
// copyable: `request` points into `keys`, `limits` and `checks`).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "spillway/store.h"

namespace spillway {

struct OwnedRequest {
  explicit OwnedRequest(const StoreRequest& from) : request(from) {
    const std::span<const KeyedLimit> original = from.checks();
    keys.reserve(original.size());
    limits.reserve(original.size());
    for (const KeyedLimit& c : original) {
      keys.emplace_back(c.key);
      limits.push_back(*c.limit);
    }
    checks.reserve(original.size());
    for (std::size_t i = 0; i < original.size(); ++i) checks.push_back({keys[i], &limits[i]});
    request.checks_ = checks;  // the same, valid, request over the copies
  }
  OwnedRequest(const OwnedRequest&) = delete;
  OwnedRequest& operator=(const OwnedRequest&) = delete;

  std::vector<std::string> keys;
  std::vector<Limit> limits;
  std::vector<KeyedLimit> checks;  // keys[i] under limits[i]
  StoreRequest request;            // as the original, over `checks`
};

}  // namespace spillway
