// The layers of the usage-based limits' tests: requests per minute (fixed_window, each request
// costs 1) and tokens per minute (sliding_window, each request costs its "tokens" attribute),
// both keyed by API key.
#pragma once

#include <cstdint>
#include <vector>

#include "spillway/policy_spec.h"

namespace spillway::testing {

inline std::vector<policy::LayerSpec> llm_layers(std::int64_t requests, std::int64_t tokens) {
  policy::LayerSpec rpm;
  rpm.name = "rpm";
  rpm.key = {"api_key"};
  rpm.algorithm = Algorithm::kFixedWindow;
  rpm.limit = policy::RateSpec{.limit = requests, .period = kMicrosPerMinute};
  policy::LayerSpec tpm;
  tpm.name = "tpm";
  tpm.key = {"api_key"};
  tpm.algorithm = Algorithm::kSlidingWindow;
  tpm.cost = "tokens";
  tpm.limit = policy::RateSpec{.limit = tokens, .period = kMicrosPerMinute};
  return {rpm, tpm};
}

}  // namespace spillway::testing
