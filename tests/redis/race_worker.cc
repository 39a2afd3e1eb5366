// A separate process for the distributed-race test: waits until a shared start instant, then
// checks one hot key ATTEMPTS times from THREADS threads and prints how many were admitted.
//
//   race_worker store URL PREFIX ALGORITHM LIMIT ATTEMPTS THREADS START_AT_US [KEYS]
//   race_worker layers URL PREFIX ALGORITHM LIMIT ATTEMPTS THREADS START_AT_US
//   race_worker naive URL PREFIX - LIMIT ATTEMPTS THREADS START_AT_US
//
// "store" uses spillway's RedisStore (one atomic script per check, server clock). "layers"
// checks three layers all-or-nothing (check_all) on keys "edge", "key" and "endpoint" with
// limits LIMIT, 2*LIMIT and 3*LIMIT (on a cluster: three slots, reserve then refund). "naive" is
// the seed article's broken limiter, kept as a canary: GET the count, compare, then INCR — a second
// round trip in which other processes read the same count.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "spillway/clock.h"
#include "spillway/redis_store.h"
#include "src/redis/client.h"
#include "src/redis/url.h"

using namespace spillway;

int main(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr,
                 "usage: race_worker store|naive URL PREFIX ALGORITHM LIMIT ATTEMPTS THREADS "
                 "START_AT_US [KEYS]\n");
    return 2;
  }
  const std::string mode = argv[1], url = argv[2], prefix = argv[3], algorithm_text = argv[4];
  const std::int64_t limit_value = std::stoll(argv[5]);
  const int attempts = std::stoi(argv[6]);
  const int threads = std::stoi(argv[7]);
  const Micros start_at = std::stoll(argv[8]);
  const int keys = argc > 9 ? std::stoi(argv[9]) : 1;

  std::unique_ptr<RedisStore> store;
  std::unique_ptr<redis::Client> naive;
  std::optional<Limit> limit;
  std::vector<Limit> layer_limits;
  const bool layered = mode == "layers" || mode == "layers-reserve";
  if (layered) {
    for (int scale = 1; scale <= 3; ++scale) {
      layer_limits.push_back(
          *Limit::make(*parse_algorithm(algorithm_text), scale * limit_value, kMicrosPerDay));
    }
  }
  if (mode == "store" || layered) {
    if (mode == "store") {
      limit = *Limit::make(*parse_algorithm(algorithm_text), limit_value, kMicrosPerDay);
    }
    // Layers: readable key names, whose hash tags are "edge", "key" and "endpoint", which the
    // test places on three primaries (a digest's slot would depend on the algorithm and limit).
    store = std::move(
        *RedisStore::open({.url = url,
                           .key_prefix = prefix,
                           .timeout = std::chrono::seconds(5),
                           .cluster_dry_run_first = mode != "layers-reserve",
                           .key_hash = {.hash = layered ? KeyHash::kNone : KeyHash::kSha256}}));
  } else {
    naive = std::make_unique<redis::Client>(*redis::parse_redis_url(url));
  }
  // Warm up the connections (and the script cache) before the start instant.
  if (store && limit) (void)store->check("warmup", *limit, 0);
  if (store && !limit) (void)store->check("warmup", layer_limits[0], 0);
  if (naive) (void)naive->call({"PING"});

  SystemClock clock;
  while (clock.now() < start_at) std::this_thread::yield();

  std::atomic<int> admitted{0}, errors{0}, next{0};
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = next++; i < attempts; i = next++) {
        const std::string key = "hot" + std::to_string(i % keys);
        if (store && !limit) {
          const std::vector<KeyedLimit> layers = {{"edge", &layer_limits[0]},
                                                  {"key", &layer_limits[1]},
                                                  {"endpoint", &layer_limits[2]}};
          auto d = store->check_all(layers, 1);
          if (!d)
            ++errors;
          else if (all_allowed(*d))
            ++admitted;
          continue;
        }
        if (store) {
          auto d = store->check(key, *limit);
          if (!d)
            ++errors;
          else if (d->allowed)
            ++admitted;
          continue;
        }
        const std::string naive_key = prefix + ":naive:" + key;
        auto count = naive->call({"GET", naive_key});
        if (!count) {
          ++errors;
          continue;
        }
        const long long seen =
            count->type == redis::Reply::Type::kString ? std::stoll(count->text) : 0;
        if (seen >= limit_value) continue;
        // The app's work in between: long enough that, with several threads in flight, others
        // read the same count before this INCR lands (even when sanitizers slow everything). Real
        // time: the other threads and processes run on it.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (naive->call({"INCR", naive_key}))
          ++admitted;
        else
          ++errors;
      }
    });
  }
  workers.clear();
  std::printf("admitted=%d errors=%d\n", admitted.load(), errors.load());
  return errors > 0 ? 1 : 0;
}
