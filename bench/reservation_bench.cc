// What a reservation costs next to a plain check, on the memory store: the two-layer LLM policy
// (rpm: fixed_window; tpm: sliding_window with a cost attribute) decided by
//   check            Policy::decide (one all-or-nothing check of both layers)
//   reserve          Policy::reserve (the same check, plus the reservation's record)
//   reserve+commit   Policy::reserve, then Store::settle with an actual cost below the estimate
// Limits high enough that nothing is denied. Each repetition a fresh store. Run:
// build/release/bench/reservation_bench --benchmark_report_aggregates_only=true
// (docs/benchmarks.md, section 12).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"

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
  spillway::MemoryStore store;
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

void Check(benchmark::State& state) { run(state, Kind::kCheck); }
void Reserve(benchmark::State& state) { run(state, Kind::kReserve); }
void ReserveCommit(benchmark::State& state) { run(state, Kind::kReserveCommit); }

// A fixed count, under the store's 1,000,000 held reservations (settled ones are held until
// their ttl too), repeated for medians.
BENCHMARK(Check)->Iterations(300'000)->Repetitions(5);
BENCHMARK(Reserve)->Iterations(300'000)->Repetitions(5);
BENCHMARK(ReserveCommit)->Iterations(300'000)->Repetitions(5);

}  // namespace

BENCHMARK_MAIN();
