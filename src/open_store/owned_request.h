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
    leases.resize(original.size());
    checks.reserve(original.size());
    for (std::size_t i = 0; i < original.size(); ++i) {
      const LeaseSpec* lease = nullptr;
      if (original[i].lease != nullptr) {
        leases[i] = *original[i].lease;
        lease = &leases[i];
      }
      checks.push_back({keys[i], &limits[i], original[i].cost, lease});
    }
    request.checks_ = checks;  // the same, valid, request over the copies
    if (const ReserveSpec* spec = from.reserve()) {
      reserve_id = std::string(spec->id);
      labels.reserve(spec->layers.size());
      for (const ReservedLayer& layer : spec->layers) labels.emplace_back(layer.label);
      for (std::size_t i = 0; i < labels.size(); ++i) {
        layers.push_back({labels[i], spec->layers[i].metered});
      }
      reserve = {.id = reserve_id, .ttl = spec->ttl, .layers = layers};
      request.reserve_ = &reserve;
    }
  }
  OwnedRequest(const OwnedRequest&) = delete;
  OwnedRequest& operator=(const OwnedRequest&) = delete;

  std::vector<std::string> keys;
  std::vector<Limit> limits;
  std::vector<LeaseSpec> leases;   // leases[i]: checks[i]'s lease when it has one
  std::vector<KeyedLimit> checks;  // keys[i] under limits[i]
  // A kReserve request's spec, over copies of its id and labels.
  std::string reserve_id;
  std::vector<std::string> labels;
  std::vector<ReservedLayer> layers;
  ReserveSpec reserve{};
  StoreRequest request;  // as the original, over `checks` (and `reserve`)
};

}  // namespace spillway
