#include "src/cli/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "spillway/limit.h"
#include "spillway/open_store.h"
#include "src/cli/args.h"
#include "src/cli/http_load.h"
#include "src/cli/latency_histogram.h"
#include "src/cli/load_totals.h"
#include "src/cli/schedule_wait.h"
#include "src/core/json_writer.h"
#include "src/core/text.h"

namespace spillway::cli {
namespace {

struct BenchSetup {
  std::string backend = "memory";
  Limit limit;
  int concurrency = 1;
  std::int64_t keys = 1000;
  std::chrono::milliseconds duration{5000};
  std::int64_t requests = 0;  // when > 0: stop after this many checks in all (not duration)
  std::int64_t rate = 0;      // when > 0: checks/s offered in all, on a schedule (open loop)
  int batch = 128;            // redis: most checks per script call
  int in_flight = 0;          // redis: script calls in flight before checks batch (0: default)
  int replica_acks = 0;       // redis: --durability replicated (1): every write on a replica first
  std::string key_prefix = std::string(kBenchKeyPrefix);  // redis: apart from serve's keys
  std::optional<HttpTarget> http;   // --http: load an HTTP server instead of a backend
  int threads = 2;                  // --http: event loops
  bool json = false;                // --json: the report as one JSON object
  std::optional<std::string> body;  // --http --body/--body-file: every request's body
};

using Steady = std::chrono::steady_clock;

// --body/--body-file: the most bytes of a request body (the server's own cap is 64 KiB).
constexpr std::size_t kMaxBenchBody = 65536;

// In-process closed loop: the latency of one check in this many is measured (see run_threads).
constexpr std::uint32_t kClosedLoopSampling = 64;

Result<BenchSetup> parse_setup(int argc, char** argv, int first) {
  auto args = Args::parse(
      argc, argv, first,
      {"backend", "algorithm", "limit",    "period", "burst",     "max-delay", "concurrency",
       "keys",    "duration",  "requests", "rate",   "batch",     "in-flight", "key-prefix",
       "http",    "threads",   "json",     "body",   "body-file", "durability"},
      {"json"});
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
  auto max_delay = args->get_duration("max-delay");
  if (!max_delay) return std::unexpected(max_delay.error());
  auto made =
      Limit::make(*algorithm, limit->value_or(100), *period, *burst, max_delay->value_or(0));
  if (!made) {
    return invalid_argument("--limit/--period/--burst/--max-delay: " + made.error().message);
  }
  auto concurrency = args->get_int("concurrency", 1, 1024);
  if (!concurrency) return std::unexpected(concurrency.error());
  auto keys = args->get_int("keys", 1, 100'000'000);
  if (!keys) return std::unexpected(keys.error());
  auto requests = args->get_int("requests", 1, std::int64_t{1} << 40);
  if (!requests) return std::unexpected(requests.error());
  auto rate = args->get_int("rate", 1, 1'000'000'000);
  if (!rate) return std::unexpected(rate.error());
  BenchSetup setup{.backend = args->get("backend").value_or("memory"), .limit = *made};
  setup.concurrency = static_cast<int>(concurrency->value_or(1));
  setup.keys = keys->value_or(1000);
  setup.requests = requests->value_or(0);
  setup.rate = rate->value_or(0);
  auto batch = args->get_int("batch", 1, 4096);
  if (!batch) return std::unexpected(batch.error());
  setup.batch = static_cast<int>(batch->value_or(128));
  auto in_flight = args->get_int("in-flight", 1, 4096);
  if (!in_flight) return std::unexpected(in_flight.error());
  setup.in_flight = static_cast<int>(in_flight->value_or(0));
  if (auto durability = args->get("durability")) {
    if (*durability != "async" && *durability != "replicated") {
      return invalid_argument("--durability: \"" + *durability + "\" must be async or replicated");
    }
    if (*durability == "replicated" && (args->get("http") || setup.backend == "memory")) {
      return invalid_argument(
          "--durability replicated is for a Redis --backend (it waits for a replica)");
    }
    setup.replica_acks = *durability == "replicated" ? 1 : 0;
  }
  if (auto prefix = args->get("key-prefix")) {
    if (prefix->empty()) return invalid_argument("--key-prefix must not be empty");
    setup.key_prefix = *prefix;
  }
  if (auto url = args->get("http")) {
    if (args->get("backend")) return invalid_argument("--http and --backend: give one of them");
    auto target = parse_http_target(*url);
    if (!target) return std::unexpected(target.error());
    setup.http = *target;
    setup.concurrency = static_cast<int>(concurrency->value_or(64));
  }
  auto threads = args->get_int("threads", 1, 64);
  if (!threads) return std::unexpected(threads.error());
  setup.threads = static_cast<int>(threads->value_or(2));
  setup.json = args->has("json");
  if (args->has("body") || args->has("body-file")) {
    if (!setup.http) return invalid_argument("--body and --body-file need --http");
    if (args->has("body") && args->has("body-file")) {
      return invalid_argument("--body and --body-file: give one of them");
    }
    if (auto text = args->get("body")) {
      setup.body = *text;
    } else {
      const std::string path = *args->get("body-file");
      std::ifstream file(path, std::ios::binary);
      std::ostringstream read;
      read << file.rdbuf();
      if (!file) return invalid_argument("--body-file: cannot read \"" + path + "\"");
      setup.body = read.str();
    }
    if (setup.body->size() > kMaxBenchBody) {
      return invalid_argument("--body: " + std::to_string(setup.body->size()) + " bytes; at most " +
                              std::to_string(kMaxBenchBody));
    }
  }
  if (auto duration = args->get("duration")) {
    auto parsed = parse_duration(*duration);
    if (!parsed) return invalid_argument("--duration: " + parsed.error().message);
    setup.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(*parsed));
  }
  return setup;
}

// A lane's share of the run: checks are taken from the shared count (--requests) 64 at a time,
// so that lanes do not contend on it once per check; the total stays exact.
class Budget {
 public:
  Budget(const BenchSetup& setup, std::atomic<std::int64_t>& issued, const std::atomic<bool>& stop)
      : setup_(setup), issued_(issued), stop_(stop) {}

  // Whether the lane may issue one more check (duration not over, request budget not spent).
  bool take() {
    if (stop_.load(std::memory_order_relaxed)) return false;
    if (setup_.requests == 0) return true;
    if (left_ == 0) {
      const std::int64_t before = issued_.fetch_add(kChunk, std::memory_order_relaxed);
      left_ = std::clamp<std::int64_t>(setup_.requests - before, 0, kChunk);
      if (left_ == 0) return false;
    }
    --left_;
    return true;
  }

 private:
  static constexpr std::int64_t kChunk = 64;
  const BenchSetup& setup_;
  std::atomic<std::int64_t>& issued_;
  const std::atomic<bool>& stop_;
  std::int64_t left_ = 0;
};

// Picks keys at random (xorshift, scaled to the key count without a division): cheap next to a
// check.
class KeyPicker {
 public:
  KeyPicker(const std::vector<std::string>& keys, int lane)
      : keys_(keys), x_(0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(lane + 1)) {}
  const std::string& next() {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    // (x >> 32) * n >> 32: uniform over n < 2^32 keys (--keys is at most 10^8).
    return keys_[static_cast<std::size_t>(((x_ >> 32) * keys_.size()) >> 32)];
  }

 private:
  const std::vector<std::string>& keys_;
  std::uint64_t x_;
};

// A decision counts as a check; an error only as an error: a dead backend answers errors very
// fast, and they must not pass for checks per second. Whether it was a decision.
bool count(LoadTotals& totals, const Result<Decision>& decision) {
  if (!decision) {
    totals.error(decision.error().message);
    return false;
  }
  if (decision->allowed) {
    ++totals.admitted;
  } else {
    ++totals.denied;
  }
  return true;
}

// Counts the answer and, for a decision, samples its latency.
void record(LoadTotals& totals, const Result<Decision>& decision, Steady::duration took) {
  if (count(totals, decision)) {
    totals.latencies.record(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
  }
}

void stop_after(const BenchSetup& setup, std::atomic<bool>& stop) {
  if (setup.requests > 0) return;
  std::this_thread::sleep_for(setup.duration);
  stop = true;
}

// The time between two scheduled checks of one lane when `lanes` share --rate.
Steady::duration lane_interval(const BenchSetup& setup, int lanes) {
  return std::chrono::duration_cast<Steady::duration>(
      std::chrono::duration<double>(static_cast<double>(lanes) / static_cast<double>(setup.rate)));
}

// In-process backends: one thread per lane. Closed loop: checks back to back, one in
// kClosedLoopSampling timed (two clock reads cost as much as a check: timing each one would halve
// what is measured, one in 8 still cost a tenth; a uniform sample keeps the percentiles). Open loop
// (--rate): each check has its time on the lane's schedule and its latency counts from that time,
// so a stall delays the checks behind it and shows in their latencies.
void run_threads(Store& store, const BenchSetup& setup, const std::vector<std::string>& keys,
                 std::atomic<std::int64_t>& issued, std::atomic<bool>& stop,
                 std::vector<LoadTotals>& totals) {
  std::vector<std::jthread> threads;
  const Steady::time_point start = Steady::now() + std::chrono::milliseconds(1);
  for (int t = 0; t < setup.concurrency; ++t) {
    threads.emplace_back([&, t] {
      LoadTotals& mine = totals[static_cast<std::size_t>(t)];
      Budget budget(setup, issued, stop);
      KeyPicker pick(keys, t);
      if (setup.rate == 0) {
        for (std::uint32_t n = 0; budget.take(); ++n) {
          if (n % kClosedLoopSampling != 0) {
            count(mine, store.check(pick.next(), setup.limit));
            continue;
          }
          const Steady::time_point before = Steady::now();
          const Result<Decision> decision = store.check(pick.next(), setup.limit);
          record(mine, decision, Steady::now() - before);
        }
        return;
      }
      const Steady::duration interval = lane_interval(setup, setup.concurrency);
      Steady::time_point scheduled = start + interval * t / setup.concurrency;
      while (budget.take()) {
        wait_until(scheduled);
        const Result<Decision> decision = store.check(pick.next(), setup.limit);
        record(mine, decision, Steady::now() - scheduled);
        scheduled += interval;
      }
    });
  }
  stop_after(setup, stop);
}

// Network backends, closed loop: `concurrency` checks kept in flight; each completion issues the
// next one. An answer that comes at once (an open circuit) comes back through the store's inline
// queue (src/core/inline_completion.h), so the chain loops on one thread instead of recursing;
// the duration is timed on a thread of its own, since the thread that starts the lanes may be
// the one that loops.
void run_in_flight(Store& store, const BenchSetup& setup, const std::vector<std::string>& keys,
                   std::atomic<std::int64_t>& issued, std::atomic<bool>& stop,
                   std::vector<LoadTotals>& totals) {
  std::mutex mutex;
  std::condition_variable idle;
  int lanes_running = setup.concurrency;
  struct Lane {
    Budget budget;
    KeyPicker pick;
    LoadTotals* totals;
  };
  std::vector<Lane> lanes;
  for (int t = 0; t < setup.concurrency; ++t) {
    lanes.push_back(
        {Budget(setup, issued, stop), KeyPicker(keys, t), &totals[static_cast<std::size_t>(t)]});
  }
  // A lane's next check; completions run on the backend's thread and chain the next check.
  std::function<void(Lane&)> next = [&](Lane& lane) {
    if (!lane.budget.take()) {
      std::lock_guard lock(mutex);
      if (--lanes_running == 0) idle.notify_all();
      return;
    }
    const Steady::time_point before = Steady::now();
    store.check_async(lane.pick.next(), setup.limit, 1, std::nullopt,
                      [&, before](Result<Decision> decision) {
                        record(*lane.totals, decision, Steady::now() - before);
                        next(lane);
                      });
  };
  std::jthread timer([&] { stop_after(setup, stop); });
  for (Lane& lane : lanes) next(lane);
  std::unique_lock lock(mutex);
  idle.wait(lock, [&] { return lanes_running == 0; });
}

// Network backends, open loop (--rate): one thread issues the checks on the schedule, however
// many are still in flight; each latency counts from the check's scheduled time. The run ends
// when every check issued has its answer.
void run_scheduled(Store& store, const BenchSetup& setup, const std::vector<std::string>& keys,
                   std::atomic<std::int64_t>& issued, std::atomic<bool>& stop,
                   std::vector<LoadTotals>& totals) {
  std::mutex mutex;  // guards totals[0] and outstanding; completions come from backend threads
  std::condition_variable drained;
  std::int64_t outstanding = 0;
  Budget budget(setup, issued, stop);
  KeyPicker pick(keys, 0);
  const Steady::duration interval = lane_interval(setup, 1);
  std::jthread timer([&] { stop_after(setup, stop); });
  for (Steady::time_point scheduled = Steady::now(); budget.take(); scheduled += interval) {
    wait_until(scheduled);
    {
      std::lock_guard lock(mutex);
      ++outstanding;
    }
    store.check_async(pick.next(), setup.limit, 1, std::nullopt,
                      [&, scheduled](Result<Decision> decision) {
                        const Steady::duration took = Steady::now() - scheduled;
                        std::lock_guard lock(mutex);
                        record(totals[0], decision, took);
                        if (--outstanding == 0) drained.notify_all();
                      });
  }
  std::unique_lock lock(mutex);
  drained.wait(lock, [&] { return outstanding == 0; });
}

double micros(std::uint64_t ns) { return static_cast<double>(ns) / 1000; }

// name=value lines, for people and scripts alike.
void text_report(const BenchSetup& setup, std::string_view target, const LoadTotals& all,
                 double seconds, double checks, std::ostream& out) {
  if (setup.http) {
    out << "http=" << target << " connections=" << setup.concurrency
        << " threads=" << setup.threads;
  } else {
    out << "backend=" << target << " algorithm=" << algorithm_name(setup.limit.algorithm())
        << " concurrency=" << setup.concurrency << " keys=" << setup.keys;
  }
  out << (setup.rate > 0 ? " loop=open" : " loop=closed") << "\n";
  if (setup.rate > 0) out << "offered_per_second=" << setup.rate << "\n";
  out << std::fixed << std::setprecision(0) << "checks_per_second=" << checks / seconds << "\n"
      << "errors_per_second=" << static_cast<double>(all.errors) / seconds << "\n"
      << std::setprecision(1) << "p50_us=" << micros(all.latencies.at(0.50)) << "\n"
      << "p99_us=" << micros(all.latencies.at(0.99)) << "\n"
      << "p999_us=" << micros(all.latencies.at(0.999)) << "\n"
      << "max_us=" << micros(all.latencies.max()) << "\n"
      << "admitted=" << all.admitted << "\n"
      << "denied=" << all.denied << "\n"
      << "errors=" << all.errors << "\n";
}

// --json: one object, the same numbers as the text (latencies in microseconds, exact counts).
std::string json_report(const BenchSetup& setup, std::string_view target, const LoadTotals& all,
                        double seconds) {
  const auto checks = static_cast<double>(all.admitted + all.denied);
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  if (setup.http) {
    json.member("http", target).member("connections", setup.concurrency);
    json.member("threads", setup.threads);
  } else {
    json.member("backend", target)
        .member("algorithm", algorithm_name(setup.limit.algorithm()))
        .member("concurrency", setup.concurrency)
        .member("keys", setup.keys);
  }
  json.member("loop", setup.rate > 0 ? "open" : "closed");
  if (setup.rate > 0) json.member("offered_per_second", setup.rate);
  json.key("seconds").fixed(seconds, 3);
  json.key("checks_per_second").fixed(checks / seconds, 0);
  json.key("errors_per_second").fixed(static_cast<double>(all.errors) / seconds, 0);
  json.key("p50_us").fixed(micros(all.latencies.at(0.50)), 1);
  json.key("p99_us").fixed(micros(all.latencies.at(0.99)), 1);
  json.key("p999_us").fixed(micros(all.latencies.at(0.999)), 1);
  json.key("max_us").fixed(micros(all.latencies.max()), 1);
  json.member("admitted", all.admitted).member("denied", all.denied).member("errors", all.errors);
  if (all.errors > 0) json.member("first_error", utf8_or_escaped(all.first_error));
  json.end_object();
  return out;
}

// The report both modes print (text or --json), then exit 1 when anything failed.
int report(const BenchSetup& setup, std::string_view target, const LoadTotals& all, double seconds,
           std::ostream& out, std::ostream& err) {
  const auto checks = static_cast<double>(all.admitted + all.denied);  // decided, errors apart
  if (setup.json) {
    out << json_report(setup, target, all, seconds) << "\n";
  } else {
    text_report(setup, target, all, seconds, checks, out);
  }
  if (all.errors > 0) {
    err << "spillway bench: " << all.errors << " checks failed; first error: " << all.first_error
        << "\n";
    return 1;
  }
  return 0;
}

// --http: the HTTP server at the URL under the same request stream as bench/check.lua.
int run_http(const BenchSetup& setup, std::ostream& out, std::ostream& err) {
  const HttpLoad load{.target = *setup.http,
                      .connections = setup.concurrency,
                      .threads = setup.threads,
                      .rate = setup.rate,
                      .duration = setup.duration,
                      .requests = setup.requests,
                      .body = setup.body};
  Result<LoadTotals> done = run_http_load(load);
  if (!done) {
    err << "spillway bench: " << done.error().message << "\n";
    return 1;
  }
  const std::string target =
      "http://" + load.target.host + ":" + load.target.port + load.target.path;
  return report(setup, target, *done, done->seconds, out, err);
}

}  // namespace

int run_bench(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  auto setup = parse_setup(argc, argv, first);
  if (!setup) {
    err << "spillway bench: " << setup.error().message << "\n";
    return 2;
  }
  if (setup->http) return run_http(*setup, out, err);
  // --batch 1 sends every check as its own script call, all lanes pipelined; otherwise checks
  // that wait behind --in-flight (default: the store's, 2) calls in flight go together in the
  // next call.
  const int in_flight = setup->in_flight > 0 ? setup->in_flight
                        : setup->batch == 1  ? setup->concurrency
                                             : RedisStoreOptions{}.max_in_flight;
  auto store = open_store(setup->backend, {.redis = {.key_prefix = setup->key_prefix,
                                                     .pool_size = 2,
                                                     .max_batch = setup->batch,
                                                     .max_in_flight = in_flight,
                                                     .replica_acks = setup->replica_acks}});
  if (!store) {
    err << "spillway bench: --backend: " << store.error().message << "\n";
    return store.error().code == Errc::kInvalidArgument ? 2 : 1;
  }
  std::vector<std::string> keys;
  keys.reserve(static_cast<std::size_t>(setup->keys));
  for (std::int64_t i = 0; i < setup->keys; ++i) keys.push_back("bench:" + std::to_string(i));

  std::atomic<std::int64_t> issued{0};
  std::atomic<bool> stop{false};
  std::vector<LoadTotals> totals(static_cast<std::size_t>(setup->concurrency));
  const auto started = std::chrono::steady_clock::now();
  if (setup->backend == "memory") {
    run_threads(**store, *setup, keys, issued, stop, totals);
  } else if (setup->rate > 0) {
    run_scheduled(**store, *setup, keys, issued, stop, totals);
  } else {
    run_in_flight(**store, *setup, keys, issued, stop, totals);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  LoadTotals all;  // latencies: the decided checks' (in the memory closed loop, a sample)
  for (const LoadTotals& t : totals) all.add(t);
  return report(*setup, setup->backend, all, seconds, out, err);
}

}  // namespace spillway::cli
