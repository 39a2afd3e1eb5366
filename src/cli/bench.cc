#include "src/cli/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "spillway/limit.h"
#include "spillway/open_store.h"
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
  int batch = 128;            // redis: most checks per script call
  int in_flight = 0;          // redis: script calls in flight before checks batch (0: default)
  std::string key_prefix = std::string(kBenchKeyPrefix);  // redis: apart from serve's keys
};

struct ThreadTotals {
  std::int64_t admitted = 0;
  std::int64_t denied = 0;
  std::int64_t errors = 0;
  std::string first_error;
  std::vector<std::int64_t> latencies_ns;  // one sample per check
};

Result<BenchSetup> parse_setup(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first,
                          {"backend", "algorithm", "limit", "period", "burst", "concurrency",
                           "keys", "duration", "requests", "batch", "in-flight", "key-prefix"});
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
  auto batch = args->get_int("batch", 1, 4096);
  if (!batch) return std::unexpected(batch.error());
  setup.batch = static_cast<int>(batch->value_or(128));
  auto in_flight = args->get_int("in-flight", 1, 4096);
  if (!in_flight) return std::unexpected(in_flight.error());
  setup.in_flight = static_cast<int>(in_flight->value_or(0));
  if (auto prefix = args->get("key-prefix")) {
    if (prefix->empty()) return invalid_argument("--key-prefix must not be empty");
    setup.key_prefix = *prefix;
  }
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

// Whether lane may issue one more check (duration not over, request budget not spent).
bool may_issue(const BenchSetup& setup, std::atomic<std::int64_t>& issued,
               const std::atomic<bool>& stop) {
  if (stop.load(std::memory_order_relaxed)) return false;
  return setup.requests == 0 || issued.fetch_add(1) < setup.requests;
}

// A decision counts as a check (its latency sampled); an error only as an error: a dead backend
// answers errors very fast, and they must not pass for checks per second.
void record(ThreadTotals& totals, const Result<Decision>& decision,
            std::chrono::steady_clock::time_point since) {
  if (!decision) {
    if (totals.errors++ == 0) totals.first_error = decision.error().message;
    return;
  }
  totals.latencies_ns.push_back(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count());
  if (decision->allowed) {
    ++totals.admitted;
  } else {
    ++totals.denied;
  }
}

void stop_after(const BenchSetup& setup, std::atomic<bool>& stop) {
  if (setup.requests > 0) return;
  std::this_thread::sleep_for(setup.duration);
  stop = true;
}

// In-process backends: one thread per lane, each checking back to back.
void run_threads(Store& store, const BenchSetup& setup, const std::vector<std::string>& keys,
                 std::atomic<std::int64_t>& issued, std::atomic<bool>& stop,
                 std::vector<ThreadTotals>& totals) {
  std::vector<std::jthread> threads;
  for (int t = 0; t < setup.concurrency; ++t) {
    threads.emplace_back([&, t] {
      ThreadTotals& mine = totals[static_cast<std::size_t>(t)];
      std::mt19937_64 random(static_cast<std::uint64_t>(t) * 7919 + 1);
      while (may_issue(setup, issued, stop)) {
        const auto before = std::chrono::steady_clock::now();
        record(mine, store.check(keys[random() % keys.size()], setup.limit), before);
      }
    });
  }
  stop_after(setup, stop);
}

// Network backends: `concurrency` checks kept in flight; each completion issues the next one.
// An answer that comes at once (an open circuit) comes back through the store's inline queue
// (src/core/inline_completion.h), so the chain loops on one thread instead of recursing; the
// duration is timed on a thread of its own, since the thread that starts the lanes may be the
// one that loops.
void run_in_flight(Store& store, const BenchSetup& setup, const std::vector<std::string>& keys,
                   std::atomic<std::int64_t>& issued, std::atomic<bool>& stop,
                   std::vector<ThreadTotals>& totals) {
  std::mutex mutex;
  std::condition_variable idle;
  int lanes_running = setup.concurrency;
  struct Lane {
    std::mt19937_64 random;
    ThreadTotals* totals;
  };
  std::vector<Lane> lanes;
  for (int t = 0; t < setup.concurrency; ++t) {
    lanes.push_back({std::mt19937_64(static_cast<std::uint64_t>(t) * 7919 + 1),
                     &totals[static_cast<std::size_t>(t)]});
  }
  // A lane's next check; completions run on the backend's thread and chain the next check.
  std::function<void(Lane&)> next = [&](Lane& lane) {
    if (!may_issue(setup, issued, stop)) {
      std::lock_guard lock(mutex);
      if (--lanes_running == 0) idle.notify_all();
      return;
    }
    const auto before = std::chrono::steady_clock::now();
    store.check_async(keys[lane.random() % keys.size()], setup.limit, 1, std::nullopt,
                      [&, before](Result<Decision> decision) {
                        record(*lane.totals, decision, before);
                        next(lane);
                      });
  };
  std::jthread timer([&] { stop_after(setup, stop); });
  for (Lane& lane : lanes) next(lane);
  std::unique_lock lock(mutex);
  idle.wait(lock, [&] { return lanes_running == 0; });
}

}  // namespace

int run_bench(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  auto setup = parse_setup(argc, argv, first);
  if (!setup) {
    err << "spillway bench: " << setup.error().message << "\n";
    return 2;
  }
  // --batch 1 sends every check as its own script call, all lanes pipelined; otherwise checks
  // that wait behind --in-flight (default: the store's, 2) calls in flight go together in the
  // next call.
  const int in_flight = setup->in_flight > 0 ? setup->in_flight
                        : setup->batch == 1  ? setup->concurrency
                                             : RedisStoreOptions{}.max_in_flight;
  auto store = open_store(setup->backend, {.redis = {.key_prefix = setup->key_prefix,
                                                     .pool_size = 2,
                                                     .max_batch = setup->batch,
                                                     .max_in_flight = in_flight}});
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
  if (setup->backend == "memory") {
    run_threads(**store, *setup, keys, issued, stop, totals);
  } else {
    run_in_flight(**store, *setup, keys, issued, stop, totals);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  ThreadTotals all;
  for (ThreadTotals& t : totals) {
    all.admitted += t.admitted;
    all.denied += t.denied;
    all.errors += t.errors;
    if (all.first_error.empty()) all.first_error = t.first_error;
    all.latencies_ns.insert(all.latencies_ns.end(), t.latencies_ns.begin(), t.latencies_ns.end());
  }
  std::sort(all.latencies_ns.begin(), all.latencies_ns.end());
  const auto checks = static_cast<double>(all.latencies_ns.size());  // decided, errors apart
  out << "backend=" << setup->backend << " algorithm=" << algorithm_name(setup->limit.algorithm())
      << " concurrency=" << setup->concurrency << " keys=" << setup->keys << "\n"
      << std::fixed << std::setprecision(0) << "checks_per_second=" << checks / seconds << "\n"
      << "errors_per_second=" << static_cast<double>(all.errors) / seconds << "\n"
      << std::setprecision(1)
      << "p50_us=" << static_cast<double>(percentile(all.latencies_ns, 0.50)) / 1000 << "\n"
      << "p99_us=" << static_cast<double>(percentile(all.latencies_ns, 0.99)) / 1000 << "\n"
      << "admitted=" << all.admitted << "\n"
      << "denied=" << all.denied << "\n"
      << "errors=" << all.errors << "\n";
  if (all.errors > 0) {
    err << "spillway bench: " << all.errors << " checks failed; first error: " << all.first_error
        << "\n";
    return 1;
  }
  return 0;
}

}  // namespace spillway::cli
