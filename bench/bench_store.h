// The store a policy benchmark measures (bench/reservation_bench.cc, bench/concurrency_bench.cc):
// a fresh MemoryStore, or, with SPILLWAY_BENCH_REDIS=<url>, a RedisStore on that server with a
// fresh key prefix per call, so that no run finds another's keys. Exits with a message naming
// `tool` when the server cannot be reached. Not thread-safe (one benchmark thread).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"

namespace spillway::bench {

inline bool on_redis() {
  const char* url = std::getenv("SPILLWAY_BENCH_REDIS");
  return url != nullptr && *url != '\0';
}

inline std::unique_ptr<Store> open_bench_store(const char* tool) {
  if (!on_redis()) return std::make_unique<MemoryStore>();
  static int run = 0;
  RedisStoreOptions options;
  options.url = std::getenv("SPILLWAY_BENCH_REDIS");
  options.key_prefix = std::string(tool) + std::to_string(::getpid()) + "-" + std::to_string(++run);
  auto store = RedisStore::open(options);
  if (!store || !(*store)->wait_ready(std::chrono::seconds(5))) {
    std::fprintf(stderr, "%s: cannot reach %s\n", tool, options.url.c_str());
    std::exit(1);
  }
  return std::move(*store);
}

}  // namespace spillway::bench
