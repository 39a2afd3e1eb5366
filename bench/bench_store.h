// The store a policy benchmark measures (bench/reservation_bench.cc, bench/concurrency_bench.cc):
// a fresh MemoryStore, or, with SPILLWAY_BENCH_REDIS=<url> (not empty), a RedisStore on that
// server whose key prefix is `prefix` and a count of the calls, so that no run finds another's
// keys. Exits with a message naming `tool` when the server cannot be reached. Not thread-safe
// (one benchmark thread).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"

namespace spillway::bench {

inline std::unique_ptr<Store> open_bench_store(const char* tool, const std::string& prefix) {
  const char* url = std::getenv("SPILLWAY_BENCH_REDIS");
  if (url == nullptr || *url == '\0') return std::make_unique<MemoryStore>();
  static int run = 0;
  RedisStoreOptions options;
  options.url = url;
  options.key_prefix = prefix + std::to_string(++run);
  auto store = RedisStore::open(options);
  if (!store || !(*store)->wait_ready(std::chrono::seconds(5))) {
    std::fprintf(stderr, "%s: cannot reach %s\n", tool, url);
    std::exit(1);
  }
  return std::move(*store);
}

}  // namespace spillway::bench
