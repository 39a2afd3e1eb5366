#include "src/cli/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "spillway/limit.h"
#include "spillway/store.h"
#include "src/cli/args.h"

namespace spillway::cli {
namespace {

struct BenchSetup {
  std::string backend = "memory";
  Limit limit;
  int concurrency = 1;
  std::int64_t keys = 1000;
  std::chrono::milliseconds duration{5000};
  std::int64_t requests = 0;  // when > 0: stop after this many checks in all (not duration)
};

struct ThreadTotals {
  std::int64_t admitted = 0;
  std::int64_t denied = 0;
  std::int64_t errors = 0;
  std::vector<std::int64_t> latencies_ns;  // one sample per check
};

Result<BenchSetup> parse_setup(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first,
                          {"backend", "algorithm", "limit", "period", "burst", "concurrency",
                           "keys", "duration", "requests"});
  if (!args) return std::unexpected(args.error());
  if (!args->positional().empty()) {
    return invalid_argument("unexpected argument \"" + args->positional()[0] + "\"");
  }
  auto algorithm = parse_algorithm(args->get("algorithm").value_or("gcra"));
  if (!algorithm) return invalid_argument("--algorithm: " + algorithm.error().message);
  auto limit = args->get_int("limit", 1, kMaxExact);
  if (!limit) return std::unexpected(limit.error());
  auto period = parse_duration(args->get("period").value_or("1s"));
  if (!period) return invalid_argument("--period: " + period.error().message);
  auto burst = args->get_int("burst", 1, kMaxExact);
  if (!burst) return std::unexpected(burst.error());
  auto made = Limit::make(*algorithm, limit->value_or(100), *period, *burst);
  if (!made) return invalid_argument("--limit/--period/--burst: " + made.error().message);
  auto concurrency = args->get_int("concurrency", 1, 1024);
  if (!concurrency) return std::unexpected(concurrency.error());
  auto keys = args->get_int("keys", 1, 100'000'000);
  if (!keys) return std::unexpected(keys.error());
  auto requests = args->get_int("requests", 1, std::int64_t{1} << 40);
  if (!requests) return std::unexpected(requests.error());
  BenchSetup setup{.backend = args->get("backend").value_or("memory"), .limit = *made};
  setup.concurrency = static_cast<int>(concurrency->value_or(1));
  setup.keys = keys->value_or(1000);
  setup.requests = requests->value_or(0);
  if (auto duration = args->get("duration")) {
    auto parsed = parse_duration(*duration);
    if (!parsed) return invalid_argument("--duration: " + parsed.error().message);
    setup.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(*parsed));
  }
  return setup;
}

std::int64_t percentile(std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1));
  return sorted[index];
}

}  // namespace

int run_bench(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  auto setup = parse_setup(argc, argv, first);
  if (!setup) {
    err << "spillway bench: " << setup.error().message << "\n";
    return 2;
  }
  auto store = open_store(setup->backend, {.pool_size = std::min(setup->concurrency, 4)});
  if (!store) {
    err << "spillway bench: --backend: " << store.error().message << "\n";
    return store.error().code == Errc::kInvalidArgument ? 2 : 1;
  }
  std::vector<std::string> keys;
  keys.reserve(static_cast<std::size_t>(setup->keys));
  for (std::int64_t i = 0; i < setup->keys; ++i) keys.push_back("bench:" + std::to_string(i));

  std::atomic<std::int64_t> issued{0};
  std::atomic<bool> stop{false};
  std::vector<ThreadTotals> totals(static_cast<std::size_t>(setup->concurrency));
  const auto started = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < setup->concurrency; ++t) {
      threads.emplace_back([&, t] {
        ThreadTotals& mine = totals[static_cast<std::size_t>(t)];
        std::mt19937_64 random(static_cast<std::uint64_t>(t) * 7919 + 1);
        while (!stop.load(std::memory_order_relaxed)) {
          if (setup->requests > 0 && issued.fetch_add(1) >= setup->requests) break;
          const std::string& key = keys[random() % keys.size()];
          const auto before = std::chrono::steady_clock::now();
          auto decision = (*store)->check(key, setup->limit);
          const auto after = std::chrono::steady_clock::now();
          mine.latencies_ns.push_back(
              std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count());
          if (!decision) {
            ++mine.errors;
          } else if (decision->allowed) {
            ++mine.admitted;
          } else {
            ++mine.denied;
          }
        }
      });
    }
    if (setup->requests == 0) {
      std::this_thread::sleep_for(setup->duration);
      stop = true;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  ThreadTotals all;
  for (ThreadTotals& t : totals) {
    all.admitted += t.admitted;
    all.denied += t.denied;
    all.errors += t.errors;
    all.latencies_ns.insert(all.latencies_ns.end(), t.latencies_ns.begin(), t.latencies_ns.end());
  }
  std::sort(all.latencies_ns.begin(), all.latencies_ns.end());
  const auto checks = static_cast<double>(all.latencies_ns.size());
  out << "backend=" << setup->backend << " algorithm=" << algorithm_name(setup->limit.algorithm())
      << " concurrency=" << setup->concurrency << " keys=" << setup->keys << "\n"
      << std::fixed << std::setprecision(0) << "checks_per_second=" << checks / seconds << "\n"
      << std::setprecision(1)
      << "p50_us=" << static_cast<double>(percentile(all.latencies_ns, 0.50)) / 1000 << "\n"
      << "p99_us=" << static_cast<double>(percentile(all.latencies_ns, 0.99)) / 1000 << "\n"
      << "admitted=" << all.admitted << "\n"
      << "denied=" << all.denied << "\n"
      << "errors=" << all.errors << "\n";
  return all.errors > 0 ? 1 : 0;
}

}  // namespace spillway::cli
