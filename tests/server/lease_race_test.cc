// The distributed race with quota leases (docs/SPEC.md §2.3): four `spillway serve` processes
// share one redis-server and one policy whose only layer is `sync: lease` (fixed_window, 500 a
// second, leases of at most 10 % for at most 100 ms), and 32 clients (8 per process) ask as fast
// as they can for about three seconds, far above the limit. Each process decides from its leases
// in the process; a unit is charged in Redis before any process admits it, and a fixed-window
// lease never outlives its window, so:
//   - over-admission is 0: in every window, the admissions surely in it (sent and answered in it)
//     are at most L;
//   - under steady demand little is stranded: in every window wholly inside the traffic, the
//     admissions that may lie in it (their interval meets it) are at least 90 % of L.
// Times: Redis decides at its TIME, the client reads system_clock; a decision lies between the
// client's send and the answer it read, so neither bound can fail on timing alone.
// What shows the test can fail: most checks are denied (demand is many times the limit).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr int kProcesses = 4;
constexpr int kThreadsPerProcess = 8;
constexpr auto kTraffic = 3200ms;
constexpr std::int64_t kLeaseRaceLimit = 500;
constexpr std::int64_t kLeaseRacePeriod = 1'000'000;  // µs

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Answer {
  std::int64_t sent = 0, answered = 0;
  bool allowed = false;
};

struct Tally {
  std::vector<Answer> answers;
  int errors = 0;
  std::string problem;
};

void client(std::uint16_t port, std::chrono::steady_clock::time_point stop_at, Tally& tally) {
  try {
    testing::HttpConnection connection(port);
    while (std::chrono::steady_clock::now() < stop_at) {
      Answer a;
      a.sent = now_us();
      const testing::HttpReply reply =
          connection.request("POST", "/v1/check", R"({"api_key":"race-lease"})");
      a.answered = now_us() + 1;
      if (reply.status != 200 && reply.status != 429) {
        ++tally.errors;
        if (tally.problem.empty()) tally.problem = std::to_string(reply.status) + " " + reply.body;
        continue;
      }
      a.allowed = reply.status == 200;
      tally.answers.push_back(a);
    }
  } catch (const std::exception& e) {
    ++tally.errors;
    tally.problem = std::string("the client stopped: ") + e.what();
  }
}

TEST(LeaseRace, FourProcessesNeverOverAdmitAndStrandLittle) {
  testing::RedisServer redis;
  const std::string config = "/tmp/spillway_lease_race_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(config) << "server:\n  access_log: off\n"
                        << "backend:\n  url: " << redis.url()
                        << "\n  timeout: 2s\n  on_error: deny\n"
                        << "layers:\n  - name: key\n    key: [api_key]\n"
                        << "    algorithm: fixed_window\n    limit: " << kLeaseRaceLimit << "/s\n"
                        << "    sync: lease\n    lease: {max_age: 100ms, max_share: 10%}\n";
  std::vector<std::unique_ptr<testing::ServeProcess>> servers;
  for (int p = 0; p < kProcesses; ++p) {
    servers.push_back(std::make_unique<testing::ServeProcess>(
        std::vector<std::string>{"--config", config}, "/tmp/spillway_lease_race_" +
                                                          std::to_string(::getpid()) + "_" +
                                                          std::to_string(p) + ".log"));
  }
  for (const auto& server : servers) ASSERT_TRUE(server->ready()) << server->log();

  std::vector<Tally> tallies(kProcesses * kThreadsPerProcess);
  const std::int64_t began = now_us();
  const auto stop_at = std::chrono::steady_clock::now() + kTraffic;
  std::vector<std::thread> clients;
  for (std::size_t t = 0; t < tallies.size(); ++t) {
    clients.emplace_back(client, servers[t % kProcesses]->port(), stop_at, std::ref(tallies[t]));
  }
  for (std::thread& c : clients) c.join();
  const std::int64_t ended = now_us();

  int errors = 0;
  std::string problems;
  std::map<std::int64_t, std::int64_t> surely, maybe, asked;
  std::int64_t total = 0, admitted = 0;
  for (const Tally& t : tallies) {
    errors += t.errors;
    if (!t.problem.empty()) problems += "\n  " + t.problem;
    for (const Answer& a : t.answers) {
      ++total;
      const std::int64_t first = a.sent / kLeaseRacePeriod;
      const std::int64_t last = a.answered / kLeaseRacePeriod;
      ++asked[first];
      if (!a.allowed) continue;
      ++admitted;
      if (first == last) ++surely[first];
      for (std::int64_t w = first; w <= last; ++w) ++maybe[w];
    }
  }
  EXPECT_EQ(errors, 0) << problems;
  EXPECT_GT(total, 4 * admitted) << "demand must be far above the limit for the test to mean much";

  for (const auto& [window, count] : surely) {
    EXPECT_LE(count, kLeaseRaceLimit) << "over-admission in window " << window;
  }
  // Windows wholly inside the traffic, with demand at least twice the limit.
  int full = 0;
  for (std::int64_t w = began / kLeaseRacePeriod + 1; (w + 1) * kLeaseRacePeriod <= ended; ++w) {
    std::printf("window %lld: asked %lld, admitted %lld..%lld of %lld\n", static_cast<long long>(w),
                static_cast<long long>(asked[w]), static_cast<long long>(surely[w]),
                static_cast<long long>(maybe[w]), static_cast<long long>(kLeaseRaceLimit));
    if (asked[w] < 2 * kLeaseRaceLimit) continue;
    ++full;
    EXPECT_GE(maybe[w] * 10, kLeaseRaceLimit * 9) << "more than 10 % stranded in window " << w;
  }
  EXPECT_GE(full, 1) << "no window wholly inside the traffic had twice the limit's demand";

  // The leases show in every process's metrics.
  for (const auto& server : servers) {
    testing::HttpConnection connection(server->port());
    const testing::HttpReply metrics = connection.request("GET", "/metrics", "");
    EXPECT_NE(metrics.body.find("spillway_lease_units{state=\"used\"}"), std::string::npos)
        << metrics.body.substr(0, 2000);
  }
}

}  // namespace
}  // namespace spillway
