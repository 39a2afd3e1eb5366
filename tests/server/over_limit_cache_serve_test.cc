// backend.over_limit_cache through `spillway serve` on a real Redis, for the HTTP endpoints: once
// a key is over its limit, repeated checks are denied without a Redis call (INFO commandstats
// does not move) and /metrics counts the hits; a key not over its
// limit still goes to Redis; SIGHUP (a reload) empties the cache.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

// EVALSHA + EVAL calls Redis has run so far.
long script_calls(testing::RedisServer& redis) {
  const std::string stats = redis.cli("INFO commandstats");
  long total = 0;
  for (const char* name : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
    const std::size_t at = stats.find(name);
    if (at != std::string::npos) total += std::stol(stats.substr(at + std::string(name).size()));
  }
  return total;
}

// Script calls the server made in the background so far, by its own counts: readiness probes
// (every 500 ms) and the tenant log follower's reads. Read before Redis' counts and after them,
// so that the window it spans holds the window of Redis' counts.
long olc_background_calls(std::uint16_t port) {
  const std::string metrics = testing::http(port, "GET", "/metrics").body;
  long total = 0;
  for (const char* name : {"\nspillway_backend_probes_total ", "\nspillway_tenants_reads_total "}) {
    const std::size_t at = metrics.find(name);
    if (at != std::string::npos) total += std::stol(metrics.substr(at + std::string(name).size()));
  }
  return total;
}

// Opens a window just after a readiness probe has reached Redis: the server counts a probe when
// it sends it, so one sent before the window opened but run by Redis after would be Redis' and
// not the server's in the window. The backend watch sends one probe at a time, 500 ms apart: the
// next starts well after the window's first reads. Returns {background, calls} at the opening.
std::pair<long, long> olc_open_after_a_probe(std::uint16_t port, testing::RedisServer& redis) {
  const long sent = olc_background_calls(port);
  const long calls = script_calls(redis);
  long now_sent = sent;
  // A probe sent and run (nothing else calls Redis while the test waits here).
  const bool landed = testing::wait_until(
      [&] {
        now_sent = olc_background_calls(port);
        return now_sent > sent && script_calls(redis) >= calls + (now_sent - sent);
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(landed) << "no readiness probe reached Redis within 30 s";
  return {olc_background_calls(port), script_calls(redis)};
}

// Redis' script calls between two reads, less what the server made in the background meanwhile
// (at most: the server's counts span a longer window): the calls the checks made, or fewer.
struct OlcScriptWindow {
  std::uint16_t port;
  testing::RedisServer& redis;
  std::pair<long, long> opened = olc_open_after_a_probe(port, redis);
  long background = opened.first;
  long calls = opened.second;
  // {fewest, most} script calls made by checks since the window opened.
  std::pair<long, long> checks() const {
    const long redis_calls = script_calls(redis) - calls;
    const long background_calls = olc_background_calls(port) - background;
    return {redis_calls - background_calls, redis_calls};
  }
};

testing::HttpReply limit(std::uint16_t port, const std::string& key) {
  return testing::http(port, "POST", "/v1/limit",
                       R"({"key":")" + key + R"(","limit":3,"period":"1h","algorithm":"gcra"})");
}

TEST(ServeOverLimitCache, RepeatedDenialsAreAnsweredWithoutRedisUntilTheyExpire) {
  testing::RedisServer redis;
  const std::string config = "/tmp/spillway_olc_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(config) << "server:\n  access_log: off\nbackend:\n  url: " << redis.url()
                        << "\n  timeout: 500ms\n  over_limit_cache: 100\n";
  testing::ServeProcess serve({"--config", config},
                              "/tmp/spillway_olc_" + std::to_string(::getpid()) + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();

  for (int i = 0; i < 3; ++i) ASSERT_EQ(limit(serve.port(), "olc-user").status, 200);
  const testing::HttpReply first_denial = limit(serve.port(), "olc-user");
  ASSERT_EQ(first_denial.status, 429) << first_denial.body;
  const OlcScriptWindow window{serve.port(), redis};
  for (int i = 0; i < 20; ++i) {
    const testing::HttpReply reply = limit(serve.port(), "olc-user");
    EXPECT_EQ(reply.status, 429) << reply.body;
    EXPECT_NE(reply.body.find(R"("allowed":false)"), std::string::npos) << reply.body;
  }
  EXPECT_LE(window.checks().first, 0) << "cached denials must not call Redis";
  std::string metrics = testing::http(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("spillway_over_limit_cache_hits_total 20"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("spillway_over_limit_cache_entries 1"), std::string::npos) << metrics;

  // Another key still goes to Redis.
  const OlcScriptWindow other{serve.port(), redis};
  ASSERT_EQ(limit(serve.port(), "olc-other").status, 200);
  const auto [other_fewest, other_most] = other.checks();
  EXPECT_LE(other_fewest, 1);
  EXPECT_GE(other_most, 1);

  // A reload empties the cache: the next check of the denied key asks Redis again (and is denied).
  ASSERT_EQ(::kill(serve.pid(), SIGHUP), 0);
  const bool reloaded =
      testing::wait_until([&] { return serve.log().find("reloaded") != std::string::npos; });
  ASSERT_TRUE(reloaded) << serve.log();
  metrics = testing::http(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("spillway_over_limit_cache_entries 0"), std::string::npos) << metrics;
  const OlcScriptWindow after_reload{serve.port(), redis};
  EXPECT_EQ(limit(serve.port(), "olc-user").status, 429);
  const auto [reload_fewest, reload_most] = after_reload.checks();
  EXPECT_LE(reload_fewest, 1);
  EXPECT_GE(reload_most, 1);
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  std::remove(config.c_str());
}

}  // namespace
}  // namespace spillway
