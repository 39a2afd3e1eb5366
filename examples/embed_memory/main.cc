// Embedding only spillway's in-process store and layered policies: this program links
// spillway::memory and spillway::policy, not spillway::spillway (open_store and the Redis
// backend), so it carries neither hiredis nor OpenSSL's libssl (libcrypto stays: digested key
// names use it). ctest install_memory_only builds it three ways and reads its NEEDED entries.
//
// On a MemoryStore with a manual clock (times in µs; nothing moves unless told to), a policy of
// two layers, per API key 10/min and per IP 100/min (GCRA, burst = limit):
// 1. 11 requests of one key at one instant: 10 admitted, the 11th denied by the key layer with
//    retry_after 6 s (a minute's tenth), and the IP layer not charged for it (all-or-nothing);
// 2. 6 s later the same key is admitted once more;
// 3. another key behind the same IP is admitted at the first instant too.
// Prints what it saw; exits 0 only if every decision is the one expected.
#include <spillway/clock.h>
#include <spillway/memory_store.h>
#include <spillway/policy_engine.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

using spillway::policy::Attributes;
using spillway::policy::Policy;
using spillway::policy::PolicyDecision;

bool failed = false;

void expect(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "unexpected: %s\n", what);
  failed = true;
}

std::shared_ptr<const Policy> make_policy() {
  using namespace spillway::policy;
  PolicySpec spec;
  spec.layers.push_back({.name = "key",
                         .key = {"api_key"},
                         .algorithm = spillway::Algorithm::kGcra,
                         .limit = RateSpec{.limit = 10, .period = spillway::kMicrosPerMinute}});
  spec.layers.push_back({.name = "ip",
                         .key = {"ip"},
                         .algorithm = spillway::Algorithm::kGcra,
                         .limit = RateSpec{.limit = 100, .period = spillway::kMicrosPerMinute}});
  auto policy = Policy::make(spec);
  if (!policy) {
    std::fprintf(stderr, "bad policy: %s\n", policy.error().message.c_str());
    return nullptr;
  }
  return *policy;
}

// One request of cost 1; a store error ends the program.
PolicyDecision decide(const Policy& policy, spillway::Store& store, const Attributes& request) {
  auto decision = policy.decide(store, request, 1);
  if (!decision) {
    std::fprintf(stderr, "decide failed: %s\n", decision.error().message.c_str());
    std::exit(1);
  }
  return *decision;
}

}  // namespace

int main() {
  auto clock = std::make_shared<spillway::ManualClock>(1'700'000'000 * spillway::kMicrosPerSecond);
  spillway::MemoryStore store({.clock = clock});  // thread-safe; sharded; no server needed
  const std::shared_ptr<const Policy> policy = make_policy();
  if (!policy) return 1;

  const Attributes k1{{"api_key", "k1"}, {"ip", "192.0.2.7"}};
  int admitted = 0;
  PolicyDecision last;
  for (int i = 0; i < 11; ++i) {
    last = decide(*policy, store, k1);
    if (last.allowed) ++admitted;
  }
  const std::string denied_by = last.denied_by.value_or("");
  const long retry_after = static_cast<long>(last.top.retry_after);
  std::printf("memory only: admitted %d of 11, denied by %s, retry after %ld us\n", admitted,
              denied_by.c_str(), retry_after);
  expect(admitted == 10, "10 of 11 admitted under 10/min");
  expect(!last.allowed && denied_by == "key", "the 11th denied by the key layer");
  expect(retry_after == 6 * spillway::kMicrosPerSecond, "retry_after of 6 s");

  // Another key behind the same IP: admitted (its own 10/min). The IP layer has 89 of 100 left:
  // charged for the 11 admitted requests, not for the one denied.
  const PolicyDecision k2 = decide(*policy, store, {{"api_key", "k2"}, {"ip", "192.0.2.7"}});
  const long ip_remaining =
      k2.layers.size() == 2 ? static_cast<long>(k2.layers[1].decision.remaining) : -1;
  std::printf("another key: %s, ip remaining %ld\n", k2.allowed ? "admitted" : "denied",
              ip_remaining);
  expect(k2.allowed, "another key admitted");
  expect(ip_remaining == 89, "the IP layer charged for the 11 admitted only");

  clock->advance(6 * spillway::kMicrosPerSecond);
  const PolicyDecision later = decide(*policy, store, k1);
  std::printf("after 6 s: %s\n", later.allowed ? "admitted" : "denied");
  expect(later.allowed, "admitted again after retry_after");
  return failed ? 1 : 0;
}
