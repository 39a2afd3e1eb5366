// What naming a Redis key costs (src/redis/storage_key.h), per key of a check: the readable form
// (key_hash: none) next to the digested ones (SHA-256, the default; HMAC-SHA-256 with a secret),
// for a typical gateway layer key. Run: build/release/bench/key_name_bench (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <string>

#include "spillway/key_hash.h"
#include "spillway/limit.h"
#include "src/redis/storage_key.h"

namespace {

void name_keys(benchmark::State& state, spillway::KeyHash hash) {
  const spillway::KeyDigest digest = *spillway::KeyDigest::make(
      {.hash = hash,
       .secret = hash == spillway::KeyHash::kHmacSha256 ? std::string(32, 's') : std::string()});
  const spillway::Limit limit =
      *spillway::Limit::make(spillway::Algorithm::kGcra, 600, spillway::kMicrosPerMinute);
  const std::string key = "gateway:40:sk-live-0123456789abcdef0123456789abcdef";
  for (auto _ : state) {
    benchmark::DoNotOptimize(spillway::redis::storage_key("spillway", digest, key, limit));
  }
}

void BM_KeyName_Readable(benchmark::State& state) { name_keys(state, spillway::KeyHash::kNone); }
void BM_KeyName_Sha256(benchmark::State& state) { name_keys(state, spillway::KeyHash::kSha256); }
void BM_KeyName_HmacSha256(benchmark::State& state) {
  name_keys(state, spillway::KeyHash::kHmacSha256);
}
BENCHMARK(BM_KeyName_Readable);
BENCHMARK(BM_KeyName_Sha256);
BENCHMARK(BM_KeyName_HmacSha256);

}  // namespace

BENCHMARK_MAIN();
