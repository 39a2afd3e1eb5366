// Redis Sentinel, with real processes: one primary, one replica and three redis-sentinel on
// loopback (tests/support/redis_sentinel.h). The store finds the primary through the sentinels,
// sends decisions only to it, and follows a failover: an unclean one (kill -9 of the primary)
// and a clean one (SENTINEL FAILOVER), both under steady load through `spillway serve`. A
// reservation made through the sentinels, replicated, settles once after a clean failover.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spillway/redis_store.h"
#include "src/redis/storage_key.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_sentinel.h"
#include "tests/support/reservation_checks.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock;

long long ms_between(SteadyTime::time_point from, SteadyTime::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

TEST(Sentinel, FindsThePrimaryAndDecidesOnlyThere) {
  testing::SentinelGroup group("spillway-main");
  auto store = RedisStore::open({.url = group.url(), .key_prefix = "sen", .timeout = 1000ms});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const Limit limit = *Limit::make(Algorithm::kSlidingWindow, 5, 60 * kMicrosPerSecond);
  int admitted = 0;
  for (int i = 0; i < 8; ++i) {
    Result<Decision> d = (*store)->check("user:1", limit);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 5);
  EXPECT_TRUE((*store)->ready());
  testing::RedisServer& primary = group.server_on(group.initial_primary_port());
  testing::RedisServer& replica = group.server_on(group.initial_replica_port());
  EXPECT_NE(primary.cli("INFO commandstats").find("cmdstat_evalsha"), std::string::npos)
      << "the scripts ran on the primary";
  EXPECT_EQ(replica.cli("INFO commandstats").find("cmdstat_evalsha"), std::string::npos)
      << "a replica was asked for a decision";
}

TEST(Sentinel, OpenNamesEverySentinelsProblem) {
  testing::SentinelGroup group("spillway-main");
  const std::string url = group.url();
  const std::string wrong_name = url.substr(0, url.rfind('/')) + "/no-such-primary";
  auto store = RedisStore::open({.url = wrong_name, .timeout = 500ms});
  ASSERT_FALSE(store.has_value());
  const std::vector<std::uint16_t> sentinels = group.sentinel_ports();
  EXPECT_EQ(std::count_if(sentinels.begin(), sentinels.end(),
                          [&](std::uint16_t port) {
                            return store.error().message.find(
                                       "127.0.0.1:" + std::to_string(port) +
                                       " monitors no primary named 'no-such-primary'") !=
                                   std::string::npos;
                          }),
            3)
      << store.error().message;

  const std::uint16_t nobody = testing::free_port();
  auto unreachable = RedisStore::open(
      {.url = "redis+sentinel://127.0.0.1:" + std::to_string(nobody) + "/x", .timeout = 300ms});
  ASSERT_FALSE(unreachable.has_value());
  EXPECT_NE(unreachable.error().message.find("127.0.0.1:" + std::to_string(nobody)),
            std::string::npos)
      << unreachable.error().message;
}

TEST(Sentinel, AConcurrencySlotIsTakenAndReleasedThroughTheSentinels) {
  testing::SentinelGroup group("spillway-conc");
  std::unique_ptr<RedisStore> a = testing::open_ready_store(group.url(), "sen-conc");
  std::unique_ptr<RedisStore> b = testing::open_ready_store(group.url(), "sen-conc");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  testing::expect_one_slot_shared_and_released(*a, *b, "in_flight:k");
}

TEST(Sentinel, AReservationMadeThroughTheSentinelsSettlesAfterAFailover) {
  testing::SentinelGroup group("spillway-main");
  const std::string prefix = "sen-resv";
  std::unique_ptr<RedisStore> maker = testing::open_ready_store(group.url(), prefix);
  ASSERT_TRUE(maker != nullptr);

  // One request (rpm, the request's cost 1) and an estimate of 600 tokens (tpm, metered).
  const std::string id = new_reservation_id();
  const Result<Decisions> reserved = testing::reserve_request_and_tokens(*maker, id);
  ASSERT_TRUE(reserved.has_value()) << reserved.error().message;
  ASSERT_EQ(reserved->size(), 2u);
  EXPECT_TRUE(all_allowed(*reserved));
  EXPECT_EQ((*reserved)[1].remaining, 400);

  // The record and both layers' charges on the replica before the switch (SENTINEL FAILOVER
  // does not wait for it to catch up).
  const std::uint16_t old_primary = group.primary_port();
  ASSERT_EQ(old_primary, group.initial_primary_port());
  testing::RedisServer& replica = group.server_on(group.initial_replica_port());
  const std::string exists = "EXISTS '" + redis::reservation_home_key(prefix, id) + "' '" +
                             maker->storage_key("rpm", testing::kReserveRequests) + "' '" +
                             maker->storage_key("tpm", testing::kReserveTokens) + "'";
  ASSERT_TRUE(testing::wait_until([&] { return replica.cli(exists) == "3\n"; }, 5s))
      << "the replica has " << replica.cli(exists) << " of the record and the two keys";

  group.failover();
  ASSERT_TRUE(group.wait_for_new_primary(old_primary, 10s)) << group.logs();
  const std::uint16_t new_primary = group.primary_port();
  ASSERT_EQ(new_primary, group.initial_replica_port());

  // Committed below the estimate through a store that found the new primary: 250 tokens used.
  std::unique_ptr<RedisStore> settler = testing::open_ready_store(group.url(), prefix);
  ASSERT_TRUE(settler != nullptr);
  const Result<Settled> settled =
      settler->settle_and_wait({.id = id, .cost = 250, .now = testing::kReserveNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  testing::expect_committed_at_250(*settled);

  // The store that made it follows the failover once the old primary is a replica (the
  // sentinels closed its connections then): a second settlement is a conflict there.
  testing::RedisServer& demoted = group.server_on(old_primary);
  ASSERT_TRUE(testing::wait_until([&] { return demoted.cli("ROLE").starts_with("slave"); }, 8s))
      << "the old primary was not made a replica: " << group.logs();
  const Result<Settled> again =
      maker->settle_and_wait({.id = id, .cancel = true, .now = testing::kReserveNow});
  ASSERT_FALSE(again.has_value()) << "settled twice";
  EXPECT_EQ(again.error().code, Errc::kConflict) << again.error().message;
  const Result<Settled> unknown =
      maker->settle_and_wait({.id = new_reservation_id(), .cost = 1, .now = testing::kReserveNow});
  ASSERT_FALSE(unknown.has_value()) << "an unknown id was settled";
  EXPECT_EQ(unknown.error().code, Errc::kNotFound) << unknown.error().message;
  // Its checks go to the new primary, which kept the settlement: 750 tokens, 9 requests left.
  const Result<Decision> fresh =
      maker->check("after", testing::kReserveRequests, 1, testing::kReserveNow);
  ASSERT_TRUE(fresh.has_value()) << fresh.error().message;
  EXPECT_EQ(group.server_on(new_primary)
                .cli("EXISTS '" + maker->storage_key("after", testing::kReserveRequests) + "'"),
            "1\n");
  EXPECT_EQ(testing::left_at_reserve_time(*maker, "tpm", testing::kReserveTokens), 750);
  EXPECT_EQ(testing::left_at_reserve_time(*settler, "rpm", testing::kReserveRequests), 9);
}

// One request to /v1/limit as seen by the load loop.
struct Sample {
  SteadyTime::time_point sent;
  long long latency_ms;
  int status;
  bool backend_error;  // answered by on_error, not decided
};

// Keeps sending /v1/limit (100 keys, limits that always admit) on one kept-alive connection
// until stopped; records every answer.
class SentinelLoad {
 public:
  explicit SentinelLoad(std::uint16_t port) : thread_([this, port] { run(port); }) {}
  ~SentinelLoad() { stop(); }
  void stop() {
    running_ = false;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Sample> samples() {
    std::lock_guard lock(mutex_);
    return samples_;
  }
  // Waits until `n` requests sent after `since` were decided (not on_error's answer): the load
  // runs and Redis answers it. False after `limit`.
  bool wait_for_decisions(SteadyTime::time_point since, int n, std::chrono::seconds limit = 20s) {
    return testing::wait_until(
        [&] {
          std::lock_guard lock(mutex_);
          return std::count_if(samples_.begin(), samples_.end(), [&](const Sample& s) {
                   return s.sent > since && s.status != 0 && !s.backend_error;
                 }) >= n;
        },
        limit);
  }

 private:
  void run(std::uint16_t port) {
    try {
      send_until_stopped(port);
    } catch (const std::exception& e) {  // recorded as a request without an answer
      std::lock_guard lock(mutex_);
      samples_.push_back(Sample{SteadyTime::now(), 0, 0, false});
    }
  }

  void send_until_stopped(std::uint16_t port) {
    testing::HttpConnection connection(port);
    for (int i = 0; running_; ++i) {
      const std::string body = R"({"key":"load:)" + std::to_string(i % 100) +
                               R"(","limit":1000000,"period":"1s","algorithm":"gcra"})";
      const auto sent = SteadyTime::now();
      testing::HttpReply reply = connection.request("POST", "/v1/limit", body);
      const Sample sample{sent, ms_between(sent, SteadyTime::now()), reply.status,
                          !reply.header("x-spillway-backend-error").empty()};
      {
        std::lock_guard lock(mutex_);
        samples_.push_back(sample);
      }
      if (reply.status == 0) return;     // the server closed the connection: recorded, stop
      std::this_thread::sleep_for(2ms);  // real time: a steady client's pace during a failover
    }
  }

  std::atomic<bool> running_{true};
  std::mutex mutex_;
  std::vector<Sample> samples_;
  std::thread thread_;
};

constexpr int kTimeoutMs = 300;

std::string serve_config(const std::string& url) {
  const std::string path = "/tmp/spillway_sentinel_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "backend:\n  url: " << url << "\n  timeout: " << kTimeoutMs
                      << "ms\n  breaker_probe: 200ms\n";
  return path;
}

// Every request got an answer (a decision or on_error's), none held much past the timeout.
void expect_every_request_answered(const std::vector<Sample>& samples) {
  std::size_t slow = 0;
  for (const Sample& s : samples) {
    ASSERT_NE(s.status, 0) << "a request got no answer (the server closed or crashed)";
    EXPECT_TRUE(s.status == 200 || s.status == 429) << "status " << s.status;
    // The timeout, one retry pause and scheduling slack: 700 ms. A stall of a shared 2-core
    // machine (a sanitized server, a descheduled thread) may push a request or two past that,
    // never past 1.6 s. Retries that each took a fresh timeout would hold every request of the
    // outage (hundreds, one every few ms) past 700 ms.
    EXPECT_LT(s.latency_ms, 2 * kTimeoutMs + 1000) << "a request waited past the backend timeout";
    if (s.latency_ms >= kTimeoutMs + 400) ++slow;
  }
  EXPECT_LE(slow, 3u) << slow << " of " << samples.size() << " requests took over "
                      << kTimeoutMs + 400 << " ms: a request waited past the backend timeout";
}

TEST(SentinelFailover, KillingThePrimaryUnderLoadIsFollowed) {
  testing::SentinelGroup group("spillway-main", /*down_after_ms=*/1000,
                               /*failover_timeout_ms=*/4000);
  const std::string config = serve_config(group.url());
  testing::ServeProcess serve({"--config", config},
                              "/tmp/spillway_sentinel_kill_" + std::to_string(::getpid()) + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  SentinelLoad load(serve.port());
  ASSERT_TRUE(load.wait_for_decisions(SteadyTime::now(), 100)) << "no decisions before the switch";

  const std::uint16_t old_primary = group.primary_port();
  group.kill_primary();  // asks the sentinels which node is primary first: then the clock
  const auto killed = SteadyTime::now();
  ASSERT_TRUE(group.wait_for_new_primary(old_primary, 20s)) << "the sentinels promoted nobody";
  const auto promoted = SteadyTime::now();
  // SentinelLoad continues until decisions have come back for a while.
  EXPECT_TRUE(load.wait_for_decisions(promoted, 500)) << "decisions did not come back";
  load.stop();

  const std::vector<Sample> samples = load.samples();
  expect_every_request_answered(samples);
  const Sample* first_decision = nullptr;
  int on_error_answers = 0;
  for (const Sample& s : samples) {
    if (s.sent < killed) continue;
    if (s.backend_error) ++on_error_answers;
    if (!s.backend_error && first_decision == nullptr && s.sent > killed + 100ms) {
      first_decision = &s;
    }
  }
  ASSERT_NE(first_decision, nullptr) << "no decision after the failover";
  const long long recovery = ms_between(killed, first_decision->sent) + first_decision->latency_ms;
  std::printf(
      "sentinel kill -9: promoted after %lld ms, first decision after %lld ms, %d on_error "
      "answers, %zu requests\n",
      ms_between(killed, promoted), recovery, on_error_answers, samples.size());
  // Followed within the sentinels' own failover time + 1 s.
  EXPECT_LE(recovery, ms_between(killed, promoted) + 1000);
  // After it: decisions only.
  for (const Sample& s : samples) {
    if (s.sent > first_decision->sent + 500ms) {
      EXPECT_FALSE(s.backend_error);
    }
  }
  EXPECT_EQ(testing::http(serve.port(), "GET", "/healthz").status, 200) << "no restart needed";
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  std::remove(config.c_str());
}

TEST(SentinelFailover, ACleanFailoverCostsNothingBeyondTheSwitch) {
  testing::SentinelGroup group("spillway-main", 1000, 4000);
  const std::string config = serve_config(group.url());
  testing::ServeProcess serve(
      {"--config", config}, "/tmp/spillway_sentinel_clean_" + std::to_string(::getpid()) + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  SentinelLoad load(serve.port());
  ASSERT_TRUE(load.wait_for_decisions(SteadyTime::now(), 100)) << "no decisions before the switch";

  const std::uint16_t old_primary = group.primary_port();
  const auto started = SteadyTime::now();
  group.failover();
  ASSERT_TRUE(group.wait_for_new_primary(old_primary, 20s));
  const auto switched = SteadyTime::now();
  EXPECT_TRUE(load.wait_for_decisions(switched, 500)) << "decisions did not come back";
  load.stop();

  const std::vector<Sample> samples = load.samples();
  expect_every_request_answered(samples);
  int errors = 0;
  long long last_error_ms = -1;
  for (const Sample& s : samples) {
    if (!s.backend_error) continue;
    ++errors;
    last_error_ms = std::max(last_error_ms, ms_between(started, s.sent));
    EXPECT_LE(s.sent, switched + 1000ms) << "an error after the switch was over";
  }
  std::printf(
      "sentinel SENTINEL FAILOVER: switched after %lld ms, %d on_error answers (last at "
      "%lld ms), %zu requests\n",
      ms_between(started, switched), errors, last_error_ms, samples.size());
  // The decisions after the switch came from the new primary.
  const std::uint16_t new_primary = group.primary_port();
  EXPECT_NE(new_primary, old_primary);
  EXPECT_NE(group.server_on(new_primary).cli("INFO commandstats").find("cmdstat_evalsha"),
            std::string::npos);
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  std::remove(config.c_str());
}

}  // namespace
}  // namespace spillway
