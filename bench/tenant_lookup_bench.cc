// What tenant records cost on the request path: the seed policy decided on the memory store with
// the gateway's plans from the file (source: file), and with source: store over a directory of
// no records, of 1,000,000 records (the caller has one), and of 1,000,000 (the caller has none).
// Each iteration is one whole policy decision (three layers). Run:
// build/release/bench/tenant_lookup_bench (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <string>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/memory/tenant_file.h"

namespace {

using spillway::policy::Attributes;
using spillway::policy::PlanSource;
using spillway::policy::Policy;

std::shared_ptr<spillway::FileTenantDirectory> directory_of(int records) {
  auto directory = spillway::FileTenantDirectory::open("", {});
  std::shared_ptr<spillway::FileTenantDirectory> shared = std::move(*directory);
  std::vector<std::pair<std::string, spillway::TenantRecord>> batch;
  for (int i = 0; i < records; ++i) {
    batch.emplace_back("sk-live-" + std::to_string(i), spillway::TenantRecord{.plan = "pro"});
  }
  (void)shared->put_many(batch);
  return shared;
}

void decide(benchmark::State& state, PlanSource source, int records, bool caller_has_one) {
  spillway::policy::PolicySpec spec = spillway::policy::seed_policy_spec();
  spec.layers[1].by_plan->source = source;
  auto tenants = directory_of(records);
  auto policy = *Policy::make(spec, tenants);
  spillway::MemoryStore store;
  // 1,000 callers, so the gateway keys stay warm and under their limits for a while.
  std::vector<Attributes> requests;
  for (int i = 0; i < 1000; ++i) {
    const int key = caller_has_one ? i * 997 % std::max(records, 1) : records + i;
    requests.push_back({{"ip", "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250)},
                        {"api_key", "sk-live-" + std::to_string(key)},
                        {"endpoint", "/orders"}});
  }
  std::size_t next = 0;
  spillway::Micros now = 1'000'000'000;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy->decide(store, requests[next], 1, now));
    next = next + 1 == requests.size() ? 0 : next + 1;
    now += 1000;  // 1 ms apart: every caller stays admitted
  }
}

void BM_Decide_SourceFile(benchmark::State& state) { decide(state, PlanSource::kFile, 0, false); }
void BM_Decide_SourceStore_NoRecords(benchmark::State& state) {
  decide(state, PlanSource::kStore, 0, false);
}
void BM_Decide_SourceStore_1M_Hit(benchmark::State& state) {
  decide(state, PlanSource::kStore, 1'000'000, true);
}
void BM_Decide_SourceStore_1M_Miss(benchmark::State& state) {
  decide(state, PlanSource::kStore, 1'000'000, false);
}
BENCHMARK(BM_Decide_SourceFile);
BENCHMARK(BM_Decide_SourceStore_NoRecords);
BENCHMARK(BM_Decide_SourceStore_1M_Hit);
BENCHMARK(BM_Decide_SourceStore_1M_Miss);

}  // namespace

BENCHMARK_MAIN();
