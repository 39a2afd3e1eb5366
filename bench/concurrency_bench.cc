// What a concurrency limit costs next to a plain check (docs/SPEC.md §2.5), on the memory store
// or, with SPILLWAY_BENCH_REDIS=<url>, on a RedisStore one request at a time (a figure is then
// what one caller waits):
//   Check           Policy::decide on a policy of one rate layer (gcra by API key)
//   AcquireRelease  Policy::decide on the same rate layer plus a concurrency layer (the request
//                   takes a slot: a reservation), then Store::settle of its ticket (the release)
//   Acquire         the acquire alone (each ticket released after the clock stops)
// and, memory store only, HeldMemory: the resident memory each held ticket takes (500,000 held,
// across 1,000 keys; RSS read from /proc/self/statm before and after).
// Limits high enough that nothing is denied. Each repetition a fresh store. Run:
// build/release/bench/concurrency_bench --benchmark_report_aggregates_only=true
// bench/compare_concurrency.sh runs both stores side by side (docs/benchmarks.md, section 20).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_store.h"
#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "spillway/redis_store.h"

namespace {

using spillway::policy::Attributes;
using spillway::policy::Policy;

std::shared_ptr<const Policy> make_policy(bool with_concurrency) {
  spillway::policy::PolicySpec spec;
  spillway::policy::LayerSpec rate;
  rate.name = "per_key";
  rate.key = {"api_key"};
  rate.algorithm = spillway::Algorithm::kGcra;
  rate.limit =
      spillway::policy::RateSpec{.limit = 1'000'000'000, .period = spillway::kMicrosPerMinute};
  spec.layers = {rate};
  if (with_concurrency) {
    spillway::policy::LayerSpec slots;
    slots.name = "in_flight";
    slots.key = {"api_key"};
    slots.algorithm = spillway::Algorithm::kSlidingLog;
    slots.hold_ttl = 10 * spillway::kMicrosPerMinute;
    slots.limit = spillway::policy::RateSpec{.limit = 1'000'000, .period = *slots.hold_ttl};
    spec.layers.push_back(slots);
  }
  auto policy = Policy::make(spec);
  if (!policy) {
    std::fprintf(stderr, "concurrency_bench: %s\n", policy.error().message.c_str());
    std::exit(1);
  }
  return *policy;
}

std::vector<Attributes> callers() {
  std::vector<Attributes> out;
  for (int i = 0; i < 1000; ++i) out.push_back({{"api_key", "sk-live-" + std::to_string(i)}});
  return out;
}

enum class Kind { kCheck, kAcquireRelease, kAcquire };

void run(benchmark::State& state, Kind kind) {
  const auto policy = make_policy(kind != Kind::kCheck);
  const std::unique_ptr<spillway::Store> opened = spillway::bench::open_bench_store(
      "concurrency_bench", "cbench" + std::to_string(::getpid()) + "-");
  spillway::Store& store = *opened;
  const std::vector<Attributes> requests = callers();
  std::vector<std::string> held;
  std::size_t i = 0;
  std::int64_t denied = 0;
  for (auto _ : state) {
    auto decided = policy->decide(store, requests[i++ % requests.size()], 1);
    if (!decided || !decided->allowed) {
      ++denied;
      continue;
    }
    if (kind == Kind::kAcquireRelease) {
      benchmark::DoNotOptimize(
          store.settle_and_wait({.id = decided->reservation, .release = true}));
    } else if (kind == Kind::kAcquire) {
      held.push_back(std::move(decided->reservation));
    }
  }
  for (const std::string& id : held) (void)store.settle_and_wait({.id = id, .release = true});
  if (denied > 0) state.SkipWithError("a request was denied or failed: the limits are too low");
}

// Resident memory in bytes (/proc/self/statm's second field, in pages).
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

void HeldMemory(benchmark::State& state) {
  constexpr int kHeld = 500'000;
  for (auto _ : state) {
    const auto policy = make_policy(true);
    spillway::MemoryStore store;
    const std::vector<Attributes> requests = callers();
    std::vector<std::string> tickets;
    tickets.reserve(kHeld);
    const std::int64_t before = resident_bytes();
    for (int i = 0; i < kHeld; ++i) {
      auto decided = policy->decide(store, requests[i % requests.size()], 1);
      if (!decided || !decided->allowed) {
        state.SkipWithError("an acquire was denied");
        return;
      }
      tickets.push_back(std::move(decided->reservation));
    }
    // The tickets the caller keeps are not the store's: 22 bytes in a std::string each, counted
    // out below by their own measure.
    const std::int64_t after = resident_bytes();
    const std::int64_t caller = static_cast<std::int64_t>(kHeld * sizeof(std::string));
    state.counters["bytes_per_held"] =
        static_cast<double>(after - before - caller) / static_cast<double>(kHeld);
  }
}

void Check(benchmark::State& state) { run(state, Kind::kCheck); }
void AcquireRelease(benchmark::State& state) { run(state, Kind::kAcquireRelease); }
void Acquire(benchmark::State& state) { run(state, Kind::kAcquire); }

// On Redis a round trip each (two for acquire + release): fewer.
const int kIterations = std::getenv("SPILLWAY_BENCH_REDIS") ? 20'000 : 300'000;
BENCHMARK(Check)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(AcquireRelease)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(Acquire)->Iterations(kIterations)->Repetitions(5);
BENCHMARK(HeldMemory)->Iterations(1)->Repetitions(1);

}  // namespace

BENCHMARK_MAIN();
