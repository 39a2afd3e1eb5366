#include "spillway/policy_spec.h"

namespace spillway::policy {

PolicySpec seed_policy_spec() {
  const auto per_minute = [](std::int64_t n) {
    return RateSpec{.limit = n, .period = kMicrosPerMinute};
  };
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = per_minute(1000)});
  spec.layers.push_back(
      {.name = "gateway",
       .key = {"api_key"},
       .by_plan = PlanSelector{.attribute = "api_key",
                               .plans = {{"free", per_minute(60)}, {"pro", per_minute(600)}},
                               .default_plan = "free"}});
  spec.layers.push_back({.name = "endpoint",
                         .key = {"api_key", "endpoint"},
                         .by_endpoint = EndpointSelector{
                             .attribute = "endpoint",
                             .limits = {{"/search", per_minute(10)}, {"/export", per_minute(5)}}}});
  return spec;
}

}  // namespace spillway::policy
