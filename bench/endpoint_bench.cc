// What matching a request's path costs, side by side in one run: the byte-for-byte map lookup
// endpoint layers did before paths were made canonical (the reference), canonical_path() alone,
// canonical_path() + RouteTable::match on exact routes and on templates, and a whole
// Policy::decide of the seed policy on the memory store (where the path is one part of three
// layers). Every case matches the same request, "/search" or a spelling of it.
//
// Run: build/release/bench/endpoint_bench  (see docs/benchmarks.md)
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/policy/endpoint_path.h"
#include "src/policy/routes.h"

namespace spillway::policy {
namespace {

const std::vector<std::string> kRoutes = {
    "/search",   "/export",      "/profile",        "/orders/{id}", "/orders/{id}/export",
    "/files/**", "POST /search", "/users/{u}/keys", "/admin/**",    "/health"};

void BM_ByteForByteMapLookup(benchmark::State& state) {
  std::map<std::string, int, std::less<>> limits;
  for (std::size_t i = 0; i < kRoutes.size(); ++i) limits.emplace(kRoutes[i], static_cast<int>(i));
  const std::string path = "/search";
  for (auto _ : state) benchmark::DoNotOptimize(limits.find(path));
}
BENCHMARK(BM_ByteForByteMapLookup);

void BM_CanonicalPath(benchmark::State& state, const char* raw) {
  for (auto _ : state) benchmark::DoNotOptimize(canonical_path(raw, true));
}
BENCHMARK_CAPTURE(BM_CanonicalPath, plain, "/search");
BENCHMARK_CAPTURE(BM_CanonicalPath, spelled, "//api/../%73earch/?q=1");

void BM_CanonicalAndMatch(benchmark::State& state, const char* raw) {
  auto table = RouteTable::make(kRoutes, false);
  for (auto _ : state) {
    auto path = canonical_path(raw, true);
    benchmark::DoNotOptimize(table->match(*path, "GET"));
  }
}
BENCHMARK_CAPTURE(BM_CanonicalAndMatch, exact, "/search");
BENCHMARK_CAPTURE(BM_CanonicalAndMatch, template, "/orders/42/export");
BENCHMARK_CAPTURE(BM_CanonicalAndMatch, prefix, "/files/a/b/c");
BENCHMARK_CAPTURE(BM_CanonicalAndMatch, no_route, "/something/else");

void BM_SeedPolicyDecide(benchmark::State& state) {
  auto policy = Policy::make(seed_policy_spec());
  MemoryStore store;
  Attributes attributes{{"ip", "203.0.113.7"}, {"api_key", "k1"}, {"endpoint", "/search"}};
  Micros now = 0;
  for (auto _ : state) {
    now += 6'000'000;  // /search admits one every 6 s: every request admitted
    benchmark::DoNotOptimize((*policy)->decide(store, attributes, 1, now));
  }
}
BENCHMARK(BM_SeedPolicyDecide);

}  // namespace
}  // namespace spillway::policy

BENCHMARK_MAIN();
