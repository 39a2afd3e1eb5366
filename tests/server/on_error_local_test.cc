// on_error: local through `spillway serve` and the seed policy: with Redis stopped, each instance
// still enforces every layer (here the /export endpoint's 5 a minute) with ordinary decisions,
// /readyz and /metrics say it decides locally; once Redis is back, decisions come from Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

testing::HttpReply export_check(std::uint16_t port, const std::string& api_key) {
  return testing::http(port, "POST", "/v1/check",
                       R"({"ip":"192.0.2.7","api_key":")" + api_key + R"(","endpoint":"/export"})");
}

TEST(ServeOnErrorLocal, SeedPolicyHoldsWhileRedisIsDownAndRedisDecidesAgainAfter) {
  testing::RedisServer redis;
  const std::string config = "/tmp/spillway_local_" + std::to_string(::getpid()) + ".yaml";
  // Readable key names (key_hash: none), so that the keys written after the return can be found
  // by the caller's API key.
  std::ofstream(config) << "backend:\n  url: " << redis.url()
                        << "\n  timeout: 200ms\n  on_error: local\n  breaker_probe: 200ms\n"
                           "  key_hash: none\n";
  testing::ServeProcess serve({"--config", config},
                              "/tmp/spillway_local_" + std::to_string(::getpid()) + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  ASSERT_EQ(export_check(serve.port(), "warm").status, 200);

  redis.stop();
  int admitted = 0;
  for (int i = 0; i < 7; ++i) {
    testing::HttpReply reply = export_check(serve.port(), "down-key");
    EXPECT_TRUE(reply.status == 200 || reply.status == 429) << reply.status << " " << reply.body;
    EXPECT_EQ(reply.header("x-spillway-backend-error"), "") << "decided, not on_error's answer";
    admitted += reply.status == 200 ? 1 : 0;
  }
  EXPECT_EQ(admitted, 5) << "the endpoint layer (/export 5/min) must hold locally";
  testing::HttpReply ready = testing::http(serve.port(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_NE(ready.body.find(R"("backend":"local_fallback")"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find(R"("on_error":"local")"), std::string::npos) << ready.body;
  const std::string metrics = testing::http(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("spillway_local_fallback_decisions_total 7"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(spillway_backend_status{status="local_fallback"} 1)"),
            std::string::npos);

  redis.start();
  const bool back = testing::wait_until(
      [&] {
        export_check(serve.port(), "probe-key");
        return testing::http(serve.port(), "GET", "/readyz").body.find(R"("backend":"ready")") !=
               std::string::npos;
      },
      std::chrono::seconds(10));
  ASSERT_TRUE(back) << testing::http(serve.port(), "GET", "/readyz").body;
  admitted = 0;
  for (int i = 0; i < 7; ++i) admitted += export_check(serve.port(), "up-key").status == 200;
  EXPECT_EQ(admitted, 5);
  EXPECT_NE(redis.cli("KEYS '*up-key*'").find("up-key"), std::string::npos)
      << "decisions after the return were not written to Redis";
  EXPECT_NE(serve.log().find("on_error local: decided by the in-process limiter"),
            std::string::npos)
      << serve.log();
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  std::remove(config.c_str());
}

}  // namespace
}  // namespace spillway
