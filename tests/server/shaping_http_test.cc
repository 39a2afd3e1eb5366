// Shaping over HTTP (docs/SPEC.md §2.2, §5.4), on the memory, Redis and Cluster backends: POST
// /v1/check and /v1/limit answer a delayed admission with "delay_ms" for the caller to wait; GET
// /v1/auth holds its 204 for the delay (nginx in front lets the request through only then), at
// most server.max_delayed at once, and sends what it holds at shutdown.
//
// Times: a held answer is asserted to come no earlier than its delay after the request was sent
// (a lower bound, which slowness cannot break); nothing asserts how fast it comes.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "src/server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

testing::RedisServer& shaping_redis() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

testing::RunningService start_shaped(const std::string& backend, const std::string& yaml) {
  Result<policy::Config> config = policy::parse_config(yaml);
  if (!config) {
    ADD_FAILURE() << config.error().message;
    return {};
  }
  config->server.trusted_proxies = {*policy::parse_cidr("127.0.0.1/32")};
  std::unique_ptr<Store> store = testing::open_test_store(
      testing::backend_url(backend, [] { return shaping_redis().url(); }), "shape",
      /*connected=*/false);
  if (!store) return {};
  return testing::start_service(std::move(*config), std::move(store));
}

std::int64_t json_number(const std::string& body, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const std::size_t at = body.find(key);
  if (at == std::string::npos) return -1;
  return std::stoll(body.substr(at + key.size()));
}

// An hour per request: the delays are whole hours less the few ms between the requests.
const char kHourly[] = R"(layers:
  - name: smooth
    key: [user]
    algorithm: gcra
    limit: 1/1h
    burst: 1
    max_delay: 3h
  - name: plain
    key: [user]
    algorithm: fixed_window
    limit: 100/1h
)";

class Shaping : public ::testing::TestWithParam<std::string> {};

TEST_P(Shaping, CheckAnswersDelayMsAndDeniesPastTheLongestDelayChargingNothing) {
  testing::RunningService s = start_shaped(GetParam(), kHourly);
  ASSERT_TRUE(s.service);
  const std::string user = R"({"user":"u-)" + GetParam() + R"("})";
  constexpr std::int64_t kHourMs = 3'600'000;
  std::vector<std::int64_t> delays;
  for (int i = 0; i < 4; ++i) {
    HttpReply r = http(s.port(), "POST", "/v1/check", user);
    ASSERT_EQ(r.status, 200) << i << ": " << r.body;
    EXPECT_NE(r.body.find(R"("allowed":true)"), std::string::npos) << r.body;
    delays.push_back(json_number(r.body, "delay_ms"));
  }
  EXPECT_EQ(delays[0], -1) << "the first fits now: no delay_ms member";
  for (int i = 1; i < 4; ++i) {
    // i hours, less the time since the first request (well under a minute).
    EXPECT_LE(delays[i], i * kHourMs) << i;
    EXPECT_GT(delays[i], i * kHourMs - 60'000) << i;
  }
  // The fifth would wait 4h > 3h: denied, with retry_after when it would wait 3h, and no layer
  // charged (the plain layer still counts 4).
  HttpReply denied = http(s.port(), "POST", "/v1/check", user);
  ASSERT_EQ(denied.status, 429) << denied.body;
  EXPECT_EQ(json_number(denied.body, "delay_ms"), -1) << denied.body;
  const std::int64_t retry = json_number(denied.body, "retry_after_ms");
  EXPECT_LE(retry, kHourMs) << denied.body;
  EXPECT_GT(retry, kHourMs - 60'000) << denied.body;
  EXPECT_NE(denied.body.find(R"("denied_by":"smooth")"), std::string::npos) << denied.body;
  EXPECT_NE(denied.body.find(R"("remaining":96,"retry_after_ms":0,"reset_after_ms")"),
            std::string::npos)
      << denied.body;
}

TEST_P(Shaping, LimitTakesMaxDelayAndRefusesWhatCannotDelay) {
  testing::RunningService s = start_shaped(GetParam(), "{}");
  ASSERT_TRUE(s.service);
  const std::string body =
      R"({"key":"lim-)" + GetParam() + R"(","limit":1,"period":"1h","burst":1,"max_delay":"2h"})";
  EXPECT_EQ(json_number(http(s.port(), "POST", "/v1/limit", body).body, "delay_ms"), -1);
  HttpReply second = http(s.port(), "POST", "/v1/limit", body);
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_GT(json_number(second.body, "delay_ms"), 3'600'000 - 60'000) << second.body;
  EXPECT_EQ(http(s.port(), "POST", "/v1/limit", body).status, 200);  // 2h
  EXPECT_EQ(http(s.port(), "POST", "/v1/limit", body).status, 429);  // 3h > 2h
  struct Case {
    std::string body;
    std::string says;
  };
  const std::vector<Case> cases = {
      {R"({"key":"w","limit":5,"period":"1s","algorithm":"sliding_log","max_delay":"1s"})",
       "max_delay applies only to token_bucket and gcra, not sliding_log"},
      {R"({"key":"w","limit":5,"period":"1s","max_delay":"soon"})", "max_delay\\\": duration"},
      {R"({"key":"w","limit":5,"period":"1s","max_delay":500})", "max_delay"},
      {R"({"key":"w","limit":5,"period":"1s","max_delay":"1s","sync":"lease"})",
       "needs sync: exact"},
  };
  for (const Case& c : cases) {
    HttpReply r = http(s.port(), "POST", "/v1/limit", c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.body << " -> " << r.body;
  }
  // Nothing was charged by the refusals: the key "w" is whole.
  HttpReply w = http(s.port(), "POST", "/v1/limit",
                     R"({"key":"w","limit":5,"period":"1h","algorithm":"sliding_log"})");
  EXPECT_NE(w.body.find(R"("remaining":4)"), std::string::npos) << w.body;
}

// GET /v1/auth: three requests at once against 2/s with burst 1: the answers come 0, 500 and
// 1000 ms after the first decision, each no earlier than its delay, each saying its delay. A delay
// counts from its caller's `now` (docs/SPEC.md §2.2): a request whose clock was read just before
// an earlier one was decided waits that much longer, hence the 50 ms of slack above 500 and 1000.
TEST_P(Shaping, AuthHoldsEachAnswerForItsDelay) {
  testing::RunningService s = start_shaped(GetParam(), R"(layers:
  - name: smooth
    key: [ip]
    algorithm: token_bucket
    limit: 2/s
    burst: 1
    max_delay: 2s
)");
  ASSERT_TRUE(s.service);
  using Clock = std::chrono::steady_clock;
  struct Got {
    HttpReply reply;
    Clock::duration took;
  };
  // Each backend keys a different client address, so the runs share no bucket.
  const std::string ip = GetParam() == "memory"  ? "10.1.0.1"
                         : GetParam() == "redis" ? "10.1.0.2"
                                                 : "10.1.0.3";
  std::vector<std::future<Got>> answers;
  for (int i = 0; i < 3; ++i) {
    answers.push_back(std::async(std::launch::async, [&] {
      const Clock::time_point sent = Clock::now();
      HttpReply reply = http(s.port(), "GET", "/v1/auth", "", {{"X-Forwarded-For", ip}});
      return Got{std::move(reply), Clock::now() - sent};
    }));
  }
  std::vector<std::int64_t> delays;
  for (auto& answer : answers) {
    Got got = answer.get();
    ASSERT_EQ(got.reply.status, 204) << got.reply.body;
    const std::string header = got.reply.header("x-spillway-delay-ms");
    const std::int64_t delay = header.empty() ? 0 : std::stoll(header);
    delays.push_back(delay);
    EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(got.took).count() + 1, delay)
        << "answered before its delay";
  }
  std::sort(delays.begin(), delays.end());
  EXPECT_EQ(delays[0], 0);
  EXPECT_GT(delays[1], 0);
  EXPECT_LE(delays[1], 550);
  EXPECT_GT(delays[2], 500);
  EXPECT_LE(delays[2], 1050);
  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(spillway_delayed_requests_total{outcome="held"} 2)"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("spillway_delayed_held 0"), std::string::npos) << metrics;
}

// server.max_delayed 1: one answer held, the next delayed one denied (its charge kept), and at
// shutdown the held one is sent at once, admitted, saying so.
TEST_P(Shaping, AuthHoldsAtMostMaxDelayedAndSendsThemAtShutdown) {
  testing::RunningService s = start_shaped(GetParam(), R"(server:
  max_delayed: 1
layers:
  - name: smooth
    key: [ip]
    algorithm: gcra
    limit: 1/1h
    burst: 1
    max_delay: 5h
)");
  ASSERT_TRUE(s.service);
  const std::string ip = GetParam() == "memory"  ? "10.2.0.1"
                         : GetParam() == "redis" ? "10.2.0.2"
                                                 : "10.2.0.3";
  const std::map<std::string, std::string> from = {{"X-Forwarded-For", ip}};
  EXPECT_EQ(http(s.port(), "GET", "/v1/auth", "", from).status, 204);
  // Held for about an hour: it is waited for on a thread of its own.
  auto held =
      std::async(std::launch::async, [&] { return http(s.port(), "GET", "/v1/auth", "", from); });
  // Until the service holds it, a second one could be the held one: wait for the gauge.
  ASSERT_TRUE(testing::wait_until([&] {
    return http(s.port(), "GET", "/metrics").body.find("spillway_delayed_held 1") !=
           std::string::npos;
  }));
  HttpReply refused = http(s.port(), "GET", "/v1/auth", "", from);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.header("x-spillway-denied-by"), "server.max_delayed");
  EXPECT_GE(std::stoll(refused.header("retry-after")), 2 * 3600 - 60);
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  EXPECT_EQ(s.service->release_held(), 1u);
  HttpReply sent = held.get();
  EXPECT_EQ(sent.status, 204);
  EXPECT_EQ(sent.header("x-spillway-released"), "shutdown");
  EXPECT_GT(std::stoll(sent.header("x-spillway-delay-ms")), 3'600'000 - 60'000);
  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  for (const char* line : {R"(spillway_delayed_requests_total{outcome="held"} 1)",
                           R"(spillway_delayed_requests_total{outcome="refused"} 1)",
                           R"(spillway_delayed_requests_total{outcome="released_early"} 1)"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
  }
  // After shutdown began, a delayed admission is answered at once rather than held: the charge
  // of the refused one stayed, so this one waits 3h.
  HttpReply after = http(s.port(), "GET", "/v1/auth", "", from);
  EXPECT_EQ(after.status, 204);
  EXPECT_EQ(after.header("x-spillway-released"), "shutdown");
}

INSTANTIATE_TEST_SUITE_P(Backends, Shaping, ::testing::Values("memory", "redis", "cluster"));

}  // namespace
}  // namespace spillway::server
