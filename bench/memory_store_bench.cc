// Checks per second of the in-memory store, every algorithm, 1 / 10k / 1M keys, 1 and 2 threads,
// beside a naive baseline (one std::mutex around one std::unordered_map running the same GCRA
// math). Also reports heap bytes per tracked key per algorithm (glibc mallinfo2).
// SPILLWAY_BENCH_SHARDS=N sets the shared store's shard count (default: the store's, 64).
//
// Run: build/release/bench/memory_store_bench  (see docs/benchmarks.md)
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "spillway/memory_store.h"
#include "src/core/gcra.h"

namespace spillway {
namespace {

const std::vector<std::string>& keys(std::size_t n) {
  static std::unordered_map<std::size_t, std::vector<std::string>> cache;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& out = cache[n];
  if (out.empty()) {
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back("user:" + std::to_string(1000000 + i));
  }
  return out;
}

// A pseudo-random walk over the keys, different per thread; cheap enough not to dominate.
struct KeyWalk {
  explicit KeyWalk(std::size_t count, int thread)
      : n(count), x(0x9E3779B97F4A7C15ull * (thread + 1)) {}
  std::size_t next() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return n == 1 ? 0 : x % n;
  }
  std::size_t n;
  std::uint64_t x;
};

Limit bench_limit(Algorithm algorithm) {
  // 100 per second per key: with `now` advancing 1 µs per check, most checks are admitted on
  // many keys and most are denied on one hot key, as in real traffic.
  return *Limit::make(algorithm, 100, kMicrosPerSecond);
}

std::unique_ptr<MemoryStore> shared_store;

// The shared store's shards: 64 (the default), or SPILLWAY_BENCH_SHARDS (to see what two threads
// share: docs/benchmarks.md, section 14).
std::size_t bench_shards() {
  const char* set = std::getenv("SPILLWAY_BENCH_SHARDS");
  return set != nullptr ? std::strtoul(set, nullptr, 10) : MemoryStoreOptions{}.shards;
}

template <Algorithm kAlgorithm>
void BM_MemoryStore(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(n);
  if (state.thread_index() == 0) {
    shared_store = std::make_unique<MemoryStore>(
        MemoryStoreOptions{.shards = bench_shards(), .max_keys = 20'000'000});
  }
  const Limit limit = bench_limit(kAlgorithm);
  KeyWalk walk(n, state.thread_index());
  Micros now = 1'700'000'000'000'000;
  std::int64_t admitted = 0;
  for (auto _ : state) {
    auto decision = shared_store->check(names[walk.next()], limit, 1, ++now);
    admitted += decision->allowed;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["admitted"] =
      benchmark::Counter(static_cast<double>(admitted), benchmark::Counter::kAvgIterations);
  if (state.thread_index() == 0) shared_store.reset();
}

// The same, reading the store's SystemClock on every check (no explicit `now`).
void BM_MemoryStoreGcraSystemClock(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(n);
  if (state.thread_index() == 0) shared_store = std::make_unique<MemoryStore>();
  const Limit limit = bench_limit(Algorithm::kGcra);
  KeyWalk walk(n, state.thread_index());
  for (auto _ : state) benchmark::DoNotOptimize(shared_store->check(names[walk.next()], limit));
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) shared_store.reset();
}

// The same with an injected clock that costs nothing to read and moves 1 µs per read, as the
// explicit `now` of BM_MemoryStore does: the difference from BM_MemoryStoreGcraSystemClock is
// the system clock's read alone (same decisions as BM_MemoryStore). One thread: the clock is
// not thread-safe.
class CountingClock final : public Clock {
 public:
  Micros now() const override { return ++now_; }

 private:
  mutable Micros now_ = 1'700'000'000'000'000;
};

void BM_MemoryStoreGcraCountingClock(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(n);
  MemoryStore store(MemoryStoreOptions{.clock = std::make_shared<CountingClock>()});
  const Limit limit = bench_limit(Algorithm::kGcra);
  KeyWalk walk(n, 0);
  for (auto _ : state) benchmark::DoNotOptimize(store.check(names[walk.next()], limit));
  state.SetItemsProcessed(state.iterations());
}

// Baseline: what a first implementation would do.
struct NaiveStore {
  std::mutex mutex;
  std::unordered_map<std::string, core::GcraState> map;
};
std::unique_ptr<NaiveStore> naive_store;

void BM_NaiveMutexMapGcra(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(n);
  if (state.thread_index() == 0) naive_store = std::make_unique<NaiveStore>();
  const Limit limit = bench_limit(Algorithm::kGcra);
  KeyWalk walk(n, state.thread_index());
  Micros now = 1'700'000'000'000'000;
  for (auto _ : state) {
    std::lock_guard lock(naive_store->mutex);
    benchmark::DoNotOptimize(core::decide(naive_store->map[names[walk.next()]], limit, ++now, 1));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) naive_store.reset();
}

// Bytes the allocator has handed out, including blocks it mmapped.
std::size_t heap_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Where two threads' cost comes from: one store, but each thread walks keys of its own (thread t
// the n keys after t * n), so they share shard locks and the tables' lines, never a key's state.
template <Algorithm kAlgorithm>
void BM_SharedStoreOwnKeys(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(2 * n);
  if (state.thread_index() == 0) {
    shared_store = std::make_unique<MemoryStore>(
        MemoryStoreOptions{.shards = bench_shards(), .max_keys = 20'000'000});
  }
  const Limit limit = bench_limit(kAlgorithm);
  KeyWalk walk(n, state.thread_index());
  const std::size_t offset = static_cast<std::size_t>(state.thread_index() % 2) * n;
  Micros now = 1'700'000'000'000'000;
  for (auto _ : state) {
    benchmark::DoNotOptimize(shared_store->check(names[offset + walk.next()], limit, 1, ++now));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) shared_store.reset();
}

// Upper bound for two threads: each thread has a store of its own, so no cache line is shared.
template <Algorithm kAlgorithm>
void BM_PrivateStorePerThread(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& names = keys(n);
  MemoryStore store(MemoryStoreOptions{.max_keys = 20'000'000});
  const Limit limit = bench_limit(kAlgorithm);
  KeyWalk walk(n, state.thread_index());
  Micros now = 1'700'000'000'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(store.check(names[walk.next()], limit, 1, ++now));
  state.SetItemsProcessed(state.iterations());
}

// Heap bytes per tracked key: 1M distinct keys admitted once each, measured with mallinfo2.
template <Algorithm kAlgorithm>
void BM_BytesPerKey(benchmark::State& state) {
  const std::size_t n = 1'000'000;
  const auto& names = keys(n);
  const Limit limit = bench_limit(kAlgorithm);
  for (auto _ : state) {
    malloc_trim(0);
    const std::size_t before = heap_bytes();
    MemoryStore store(MemoryStoreOptions{.max_keys = 20'000'000});
    for (std::size_t i = 0; i < n; ++i)
      benchmark::DoNotOptimize(store.check(names[i], limit, 1, 1'000'000));
    const std::size_t after = heap_bytes();
    state.counters["bytes_per_key"] =
        static_cast<double>(after - before) / static_cast<double>(store.size());
    state.counters["keys"] = static_cast<double>(store.size());
  }
}

constexpr std::int64_t kKeyCounts[] = {1, 1'000, 10'000, 1'000'000};

void key_args(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : kKeyCounts) b->Arg(n);
  b->Threads(1)->Threads(2)->UseRealTime()->MinTime(0.3);
}

BENCHMARK(BM_NaiveMutexMapGcra)->Apply(key_args);
BENCHMARK(BM_MemoryStore<Algorithm::kGcra>)->Apply(key_args);
BENCHMARK(BM_MemoryStore<Algorithm::kTokenBucket>)->Apply(key_args);
BENCHMARK(BM_MemoryStore<Algorithm::kFixedWindow>)->Apply(key_args);
BENCHMARK(BM_MemoryStore<Algorithm::kSlidingWindow>)->Apply(key_args);
BENCHMARK(BM_MemoryStore<Algorithm::kSlidingLog>)->Apply(key_args);
BENCHMARK(BM_PrivateStorePerThread<Algorithm::kGcra>)->Apply(key_args);
BENCHMARK(BM_SharedStoreOwnKeys<Algorithm::kGcra>)->Apply(key_args);
BENCHMARK(BM_MemoryStoreGcraSystemClock)
    ->Arg(1'000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->MinTime(0.3);
BENCHMARK(BM_MemoryStoreGcraCountingClock)->Arg(1'000)->UseRealTime()->MinTime(0.3);
BENCHMARK(BM_BytesPerKey<Algorithm::kGcra>)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BytesPerKey<Algorithm::kTokenBucket>)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BytesPerKey<Algorithm::kFixedWindow>)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BytesPerKey<Algorithm::kSlidingWindow>)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BytesPerKey<Algorithm::kSlidingLog>)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spillway

BENCHMARK_MAIN();
