// The distributed race for concurrency limits (docs/SPEC.md §2.5): four `spillway serve`
// processes share one redis-server and a layer of 8 requests in flight per API key; 32 clients
// (8 per process) on one key, four times what fits, each take a slot through their own process,
// hold it for a while, and release it through a random one of the four, for a bounded time.
//
// What must hold whatever the interleaving:
//   - never more than 8 in flight: every client counts itself in while it holds a ticket (after
//     the acquire answered, until before its release is sent), and that count, a subset of what
//     Redis holds, never passes 8; a sampler reads the key's own count (a peek) throughout, which
//     never passes 8 either;
//   - used: under this over-demand the slots are kept busy; the peeks' mean use is at least 90 %
//     of the limit (a freed slot is taken by the next of 24 clients retrying at once; a slot is
//     only idle between a release reaching Redis and the next acquire);
//   - every release of a ticket answers 200 once, and no answer is a 5xx.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr int kRaceProcesses = 4;
constexpr int kRaceClientsPerProcess = 8;
constexpr std::int64_t kRaceSlots = 8;
constexpr auto kRaceTraffic = 3s;
constexpr auto kRaceHold = 60ms;  // long next to a round trip, even under a sanitizer

std::string concurrency_race_temp(const std::string& name) {
  return "/tmp/spillway_concurrency_race_" + std::to_string(::getpid()) + "_" + name;
}

struct RaceTally {
  int acquired = 0;
  int denied = 0;
  int released = 0;
  int wrong = 0;  // any other answer
  std::string first_wrong;
};

TEST(ConcurrencyRace, FourServersNeverHoldMoreThanTheLimitAndKeepItUsed) {
  testing::RedisServer redis;
  const std::string config = concurrency_race_temp("config.yaml");
  std::ofstream(config) << "server:\n  access_log: off\n"
                        << "backend:\n  url: " << redis.url()
                        << "\n  timeout: 5s\n  on_error: deny\n"
                        << "layers:\n  - name: in_flight\n    key: [api_key]\n"
                        << "    algorithm: concurrency\n    limit: " << kRaceSlots
                        << "\n    hold_ttl: 1m\n";
  std::vector<std::unique_ptr<testing::ServeProcess>> servers;
  for (int p = 0; p < kRaceProcesses; ++p) {
    servers.push_back(
        std::make_unique<testing::ServeProcess>(std::vector<std::string>{"--config", config},
                                                concurrency_race_temp(std::to_string(p) + ".log")));
  }
  std::vector<std::uint16_t> ports;
  for (const auto& server : servers) {
    ASSERT_TRUE(server->ready()) << server->log();
    ports.push_back(server->port());
  }

  const std::string key = "race-" + std::to_string(::getpid());
  const std::string body = R"({"api_key":")" + key + R"("})";
  std::atomic<std::int64_t> holding{0};
  std::atomic<std::int64_t> most_holding{0};
  std::atomic<bool> stop{false};
  const auto client = [&](int home, std::uint64_t seed, RaceTally& tally) {
    std::vector<std::unique_ptr<testing::HttpConnection>> connections(ports.size());
    const auto post = [&](std::size_t p, const std::string& path, const std::string& payload) {
      if (!connections[p]) connections[p] = std::make_unique<testing::HttpConnection>(ports[p]);
      return connections[p]->request("POST", path, payload);
    };
    std::mt19937_64 random(seed);
    const auto wrong = [&](const std::string& what, const testing::HttpReply& reply) {
      if (tally.wrong++ == 0)
        tally.first_wrong = what + " -> " + std::to_string(reply.status) + " " + reply.body;
    };
    try {
      while (!stop.load()) {
        const testing::HttpReply reply = post(static_cast<std::size_t>(home), "/v1/check", body);
        if (reply.status == 429) {
          ++tally.denied;
          continue;
        }
        if (reply.status != 200) {
          wrong("acquire", reply);
          continue;
        }
        boost::system::error_code error;
        const boost::json::value answer = boost::json::parse(reply.body, error);
        if (error || !answer.is_object() || !answer.as_object().contains("ticket")) {
          wrong("acquire without a ticket", reply);
          continue;
        }
        const std::string ticket(answer.at("ticket").as_string());
        ++tally.acquired;
        const std::int64_t now_holding = ++holding;
        std::int64_t seen = most_holding.load();
        while (now_holding > seen && !most_holding.compare_exchange_weak(seen, now_holding)) {
        }
        std::this_thread::sleep_for(kRaceHold);
        --holding;
        const std::size_t via =
            std::uniform_int_distribution<std::size_t>(0, ports.size() - 1)(random);
        const testing::HttpReply released =
            post(via, "/v1/release", R"({"ticket":")" + ticket + R"("})");
        if (released.status == 200) {
          ++tally.released;
        } else {
          wrong("release", released);
        }
      }
    } catch (const std::exception& e) {
      ++tally.wrong;
      tally.first_wrong = e.what();
    }
  };

  // The sampler: the key's own count, by a peek (cost 0 holds nothing), every few ms.
  std::vector<std::int64_t> samples;
  std::int64_t sample_errors = 0;
  std::thread sampler([&] {
    testing::HttpConnection connection(ports[0]);
    const std::string peek = R"({"api_key":")" + key + R"(","cost":0})";
    std::this_thread::sleep_for(300ms);  // the clients have filled the slots
    while (!stop.load()) {
      const testing::HttpReply reply = connection.request("POST", "/v1/check", peek);
      boost::system::error_code error;
      const boost::json::value answer = boost::json::parse(reply.body, error);
      if (reply.status != 200 || error || !answer.is_object()) {
        ++sample_errors;
      } else {
        samples.push_back(kRaceSlots - answer.at("remaining").as_int64());
      }
      std::this_thread::sleep_for(5ms);
    }
  });
  std::vector<RaceTally> tallies(kRaceProcesses * kRaceClientsPerProcess);
  std::vector<std::thread> clients;
  for (std::size_t t = 0; t < tallies.size(); ++t) {
    clients.emplace_back(client, static_cast<int>(t % kRaceProcesses), 36 + t,
                         std::ref(tallies[t]));
  }
  std::this_thread::sleep_for(kRaceTraffic);
  stop = true;
  for (std::thread& c : clients) c.join();
  sampler.join();

  RaceTally all;
  for (const RaceTally& t : tallies) {
    all.acquired += t.acquired;
    all.denied += t.denied;
    all.released += t.released;
    all.wrong += t.wrong;
    if (all.first_wrong.empty()) all.first_wrong = t.first_wrong;
  }
  double used = 0;
  std::int64_t most_sampled = 0;
  for (std::int64_t s : samples) {
    used += static_cast<double>(s);
    most_sampled = std::max(most_sampled, s);
  }
  const double mean_use =
      samples.empty() ? 0 : used / static_cast<double>(samples.size()) / kRaceSlots;
  std::printf(
      "concurrency race: %d acquired, %d denied, %d released, %zu samples, mean use %.3f, "
      "most held by clients %lld\n",
      all.acquired, all.denied, all.released, samples.size(), mean_use,
      static_cast<long long>(most_holding.load()));

  EXPECT_EQ(all.wrong, 0) << all.first_wrong;
  EXPECT_EQ(sample_errors, 0);
  EXPECT_EQ(all.released, all.acquired) << "every ticket released once";
  EXPECT_LE(most_holding.load(), kRaceSlots) << "more clients held a slot than the limit";
  EXPECT_LE(most_sampled, kRaceSlots);
  EXPECT_GT(all.denied, 0) << "the over-demand never met the limit: the race proved nothing";
  ASSERT_GE(samples.size(), 10u);
  EXPECT_GE(mean_use, 0.9) << "the slots stood idle under over-demand";
  // Afterwards nothing is held.
  testing::HttpConnection connection(ports[1]);
  const testing::HttpReply after =
      connection.request("POST", "/v1/check", R"({"api_key":")" + key + R"(","cost":0})");
  EXPECT_NE(after.body.find("\"remaining\":" + std::to_string(kRaceSlots)), std::string::npos)
      << after.body;
}

}  // namespace
}  // namespace spillway
