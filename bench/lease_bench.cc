// One shared GCRA limit on Redis, checked by this process as fast as it can, side by side in one
// run: exact (one script call per check; one thread waiting for each answer, and 64 checks in
// flight through the asynchronous form) and from quota leases (LeaseStore, docs/SPEC.md §2.3;
// one and two threads). Prints checks/s and the shared-store calls per check (lease requests and
// returns; the exact forms make one per check).
// Usage: lease_bench REDIS_URL [SECONDS_PER_RUN]   (bench/compare_leases.sh starts a Redis)
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spillway/lease_store.h"
#include "spillway/redis_store.h"

namespace {

using namespace spillway;
using Clock = std::chrono::steady_clock;

std::unique_ptr<RedisStore> open(const std::string& url, const std::string& prefix) {
  auto store = RedisStore::open({.url = url, .key_prefix = prefix});
  if (!store || !(*store)->wait_ready(std::chrono::seconds(5))) {
    std::fprintf(stderr, "lease_bench: cannot reach %s\n", url.c_str());
    std::exit(1);
  }
  return std::move(*store);
}

struct Run {
  double checks_per_second = 0;
  double admitted_share = 0;
  double calls_per_check = 0;
};

// `threads` threads check `key` through `store` for `seconds`, each waiting for its answer.
Run closed_loop(Store& store, const KeyedLimit& check, int threads, double seconds) {
  std::atomic<long long> checks{0}, admitted{0}, errors{0};
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  const auto began = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      long long n = 0, ok = 0, bad = 0;
      const KeyedLimit one[] = {check};
      while (true) {
        // The clock is read every 1,024 checks: a read costs as much as a leased check.
        for (int i = 0; i < 1024; ++i) {
          Result<Decisions> d = store.check_all(one, 1);
          ++n;
          if (!d) {
            ++bad;
          } else if (d->front().allowed) {
            ++ok;
          }
        }
        if (Clock::now() >= until) break;
      }
      checks += n;
      admitted += ok;
      errors += bad;
    });
  }
  for (std::thread& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  if (errors > 0) std::fprintf(stderr, "lease_bench: %lld errors\n", errors.load());
  return {.checks_per_second = static_cast<double>(checks) / elapsed,
          .admitted_share = static_cast<double>(admitted) / static_cast<double>(checks)};
}

// `in_flight` checks at once through check_all_async, each answer sending the next.
Run pipelined(Store& store, const KeyedLimit& check, int in_flight, double seconds) {
  std::atomic<long long> checks{0};
  std::atomic<bool> stop{false};
  std::atomic<int> running{in_flight};
  std::mutex mutex;
  std::condition_variable done;
  const auto began = Clock::now();
  std::function<void()> send = [&] {
    const KeyedLimit one[] = {check};
    store.check_all_async(one, 1, std::nullopt, [&](Result<Decisions>) {
      ++checks;
      if (!stop.load()) return send();
      if (--running == 0) {
        std::lock_guard lock(mutex);
        done.notify_all();
      }
    });
  };
  for (int i = 0; i < in_flight; ++i) send();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  std::unique_lock lock(mutex);
  done.wait(lock, [&] { return running.load() == 0; });
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  return {.checks_per_second = static_cast<double>(checks) / elapsed, .calls_per_check = 1};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lease_bench REDIS_URL [SECONDS_PER_RUN]\n");
    return 2;
  }
  const std::string url = argv[1];
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  // Far above what one process can ask: every check is admitted, the leases are what is measured.
  const Limit limit = *Limit::make(Algorithm::kGcra, 1'000'000'000, kMicrosPerMinute);
  const LeaseSpec lease{};  // 100 ms, 10 %

  std::printf("one GCRA limit (1e9/min) on Redis %s, %.1f s per run\n", url.c_str(), seconds);
  std::printf("%-44s %14s %10s %16s\n", "", "checks/s", "admitted", "Redis calls/check");
  {
    auto exact = open(url, "bench-exact");
    const KeyedLimit check{"shared", &limit};
    const Run one = closed_loop(*exact, check, 1, seconds);
    std::printf("%-44s %14.0f %9.1f%% %16.3f\n", "exact, 1 thread, one check at a time",
                one.checks_per_second, one.admitted_share * 100, 1.0);
    const Run many = pipelined(*exact, check, 64, seconds);
    std::printf("%-44s %14.0f %10s %16s\n", "exact, 64 in flight (batched)", many.checks_per_second,
                "", "<= 1 script");
  }
  for (int threads : {1, 2}) {
    LeaseStore leased(open(url, "bench-lease-" + std::to_string(threads)));
    const KeyedLimit check{"shared", &limit, kRequestCost, &lease};
    const Run run = closed_loop(leased, check, threads, seconds);
    const LeaseStore::Counts c = leased.counts();
    const double checks = run.checks_per_second * seconds;
    std::printf(
        "%-44s %14.0f %9.1f%% %16.6f\n",
        (std::string("leases, ") + std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""))
            .c_str(),
        run.checks_per_second, run.admitted_share * 100,
        static_cast<double>(c.acquire_calls + c.return_calls) / checks);
  }
  return 0;
}
