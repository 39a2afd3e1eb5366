// Embedding spillway, built against an installed copy (find_package(spillway)):
// 1. one in-process GCRA limiter of 5 requests per second, burst 5;
// 2. a layered policy on the same store: per IP 3/min and per API key 10/min, all-or-nothing
//    (a request the IP layer denies is not charged to the API key).
#include <spillway/memory_store.h>
#include <spillway/policy_engine.h>

#include <cstdio>
#include <string>

namespace {

int single_limiter(spillway::MemoryStore& store) {
  auto limit = spillway::Limit::make(spillway::Algorithm::kGcra, 5, spillway::kMicrosPerSecond);
  if (!limit) {
    std::fprintf(stderr, "bad limit: %s\n", limit.error().message.c_str());
    return -1;
  }
  int admitted = 0;
  for (int i = 0; i < 8; ++i) {
    auto decision = store.check("user:42", *limit);
    if (!decision) {
      std::fprintf(stderr, "check failed: %s\n", decision.error().message.c_str());
      return -1;
    }
    if (decision->allowed) ++admitted;
  }
  return admitted;
}

int layered_policy(spillway::MemoryStore& store, std::string& denied_by, long& key_remaining) {
  using namespace spillway::policy;
  PolicySpec spec;
  spec.layers.push_back({.name = "ip",
                         .key = {"ip"},
                         .algorithm = spillway::Algorithm::kGcra,
                         .limit = RateSpec{.limit = 3, .period = spillway::kMicrosPerMinute}});
  spec.layers.push_back({.name = "key",
                         .key = {"api_key"},
                         .algorithm = spillway::Algorithm::kFixedWindow,
                         .limit = RateSpec{.limit = 10, .period = spillway::kMicrosPerMinute}});
  auto policy = Policy::make(spec);
  if (!policy) {
    std::fprintf(stderr, "bad policy: %s\n", policy.error().message.c_str());
    return -1;
  }
  const Attributes request{{"ip", "192.0.2.7"}, {"api_key", "k1"}};
  int admitted = 0;
  for (int i = 0; i < 5; ++i) {
    auto decision = (*policy)->decide(store, request, 1);
    if (!decision) {
      std::fprintf(stderr, "decide failed: %s\n", decision.error().message.c_str());
      return -1;
    }
    if (decision->allowed) ++admitted;
    denied_by = decision->denied_by.value_or("");
    key_remaining = static_cast<long>(decision->layers.at(1).decision.remaining);
  }
  return admitted;
}

}  // namespace

int main() {
  spillway::MemoryStore store;  // thread-safe; sharded; no server needed
  const int single = single_limiter(store);
  if (single < 0) return 1;
  std::printf("admitted %d of 8\n", single);

  std::string denied_by;
  long key_remaining = -1;
  const int layered = layered_policy(store, denied_by, key_remaining);
  if (layered < 0) return 1;
  // The key layer was charged only for the 3 admitted requests: 7 of 10 remain.
  std::printf("policy admitted %d of 5, denied by %s, key remaining %ld\n", layered,
              denied_by.c_str(), key_remaining);
  return single == 5 && layered == 3 && denied_by == "ip" && key_remaining == 7 ? 0 : 1;
}
