// What a reservation costs next to a plain check, on the memory store: the two-layer LLM policy
// (rpm: fixed_window; tpm: sliding_window with a cost attribute) decided by
//   check            Policy::decide (one all-or-nothing check of both layers)
//   reserve          Policy::reserve (the same check, plus the reservation's record)
//   reserve+commit   Policy::reserve, then Store::settle with an actual cost below the estimate
//   reserve at cap   Policy::reserve on a store holding its 1,000,000 open reservations: refused
// Limits high enough that nothing is denied. Each repetition a fresh store. Run:
// build/release/bench/reservation_bench --benchmark_report_aggregates_only=true
// With SPILLWAY_BENCH_REDIS=<url> the same three run on a RedisStore instead, one request at a
// time (so a figure is a round trip: what one caller waits); bench/compare_reservations.sh runs
// them against a fresh redis-server and reads Redis' own CPU per call from INFO commandstats
// (docs/benchmarks.md, section 12).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_store.h"
#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "spillway/redis_store.h"

namespace {

using spillway::policy::Attributes;
using spillway::policy::Policy;

std::shared_ptr<const Policy> llm_policy() {
  spillway::policy::PolicySpec spec;
  spillway::policy::LayerSpec rpm;
  rpm.name = "rpm";
  rpm.key = {"api_key"};
  rpm.algorithm = spillway::Algorithm::kFixedWindow;
  rpm.limit = spillway::policy::RateSpec{.limit = 1'000'000, .period = spillway::kMicrosPerMinute};
  spillway::policy::LayerSpec tpm = rpm;
  tpm.name = "tpm";
  tpm.algorithm = spillway::Algorithm::kSlidingWindow;
  tpm.cost = "tokens";
  spec.layers = {rpm, tpm};
  auto policy = Policy::make(spec);
  if (!policy) {
    std::fprintf(stderr, "reservation_bench: %s\n", policy.error().message.c_str());
    std::exit(1);
  }
  return *policy;
}

std::vector<Attributes> callers() {
  std::vector<Attributes> out;
  for (int i = 0; i < 1000; ++i) {
    out.push_back({{"api_key", "sk-live-" + std::to_string(i)}, {"tokens", "400"}});
  }
  return out;
}

enum class Kind { kCheck, kReserve, kReserveCommit };

void run(benchmark::State& state, Kind kind) {
  const auto policy = llm_policy();
  const std::unique_ptr<spillway::Store> opened =
      spillway::bench::open_bench_store("reservation_bench", "bench");
  spillway::Store& store = *opened;
  const std::vector<Attributes> requests = callers();
  std::size_t i = 0;
  for (auto _ : state) {
    const Attributes& attributes = requests[i++ % requests.size()];
    if (kind == Kind::kCheck) {
      benchmark::DoNotOptimize(policy->decide(store, attributes, 1));
      continue;
    }
    auto reserved = policy->reserve(store, attributes, 1, std::chrono::minutes(10));
    if (kind == Kind::kReserveCommit && reserved && !reserved->reservation.empty()) {
      benchmark::DoNotOptimize(store.settle_and_wait({.id = reserved->reservation, .cost = 100}));
    }
  }
}

// A reserve refused because the store holds its maximum of open reservations (issue 32): a
// MemoryStore at its default cap, 1,000,000, filled before the clock starts (the 1,000 callers'
// reserves, ttl 10 min: none expires during the run), then reserves that are all refused. Each
// repetition fills a fresh store. Memory store only.
void ReserveAtCap(benchmark::State& state) {
  const auto policy = llm_policy();
  spillway::MemoryStore store;
  const std::vector<Attributes> requests = callers();
  const std::size_t cap = spillway::MemoryStoreOptions{}.max_reservations;
  for (std::size_t i = 0; i < cap; ++i) {
    auto reserved =
        policy->reserve(store, requests[i % requests.size()], 1, std::chrono::minutes(10));
    if (!reserved || reserved->reservation.empty()) {
      state.SkipWithError("a reserve below the cap was not made");
      return;
    }
  }
  std::size_t i = 0, admitted = 0;
  for (auto _ : state) {
    auto refused =
        policy->reserve(store, requests[i++ % requests.size()], 1, std::chrono::minutes(10));
    if (refused) ++admitted;
    benchmark::DoNotOptimize(refused);
  }
  if (admitted > 0) state.SkipWithError("a reserve at the cap was not refused");
}

void Check(benchmark::State& state) { run(state, Kind::kCheck); }
void Reserve(benchmark::State& state) { run(state, Kind::kReserve); }
void ReserveCommit(benchmark::State& state) { run(state, Kind::kReserveCommit); }

// A fixed count, under the store's 1,000,000 open reservations, repeated for medians.
// On Redis a round trip each: fewer.
const int kIterations = std::getenv("SPILLWAY_BENCH_REDIS") ? 20'000 : 300'000;
BENCHMARK(Check)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(Reserve)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(ReserveCommit)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(ReserveAtCap)->Iterations(kIterations)->Repetitions(5);

}  // namespace

BENCHMARK_MAIN();
