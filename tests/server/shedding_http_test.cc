// Priority load shedding over HTTP (docs/SPEC.md §2.4, §5), on the memory, Redis and Cluster
// backends: a layer's reserve keeps part of its limit for higher priorities; POST /v1/check says
// "shed" for a request denied within that share (429, the body says why), GET /v1/auth answers
// it 403 with X-Spillway-Shed: 1 (nginx maps it to 503), the metrics count it apart; and the
// priority's header is read once, checked, never guessed.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

testing::RedisServer& shedding_redis() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

// 10 per hour per API key: critical may fill 10, normal 8 (20 % kept for critical), sheddable 5
// (30 % more kept for normal and above).
constexpr char kShedding[] = R"(priority:
  levels: [critical, normal, sheddable]
  default: normal
layers:
  - name: api
    key: [api_key]
    algorithm: fixed_window
    limit: 10/1h
    reserve: {critical: 20%, normal: 30%}
)";

testing::RunningService start_shedding(const std::string& backend, bool trusted = true) {
  Result<policy::Config> config = policy::parse_config(kShedding);
  if (!config) {
    ADD_FAILURE() << config.error().message;
    return {};
  }
  if (trusted) config->server.trusted_proxies = {*policy::parse_cidr("127.0.0.1/32")};
  std::unique_ptr<Store> store = testing::open_test_store(
      testing::backend_url(backend, [] { return shedding_redis().url(); }), "shed",
      /*connected=*/false);
  if (!store) return {};
  return testing::start_service(std::move(*config), std::move(store));
}

class Shedding : public ::testing::TestWithParam<std::string> {};

// Each backend keys a different API key, so the runs share no window.
std::string key_for(const std::string& backend) { return "shed-" + backend; }

HttpReply check(const testing::RunningService& s, const std::string& key,
                const std::string& priority) {
  std::string body = R"({"api_key":")" + key + "\"";
  if (!priority.empty()) body += R"(,"priority":")" + priority + "\"";
  return http(s.port(), "POST", "/v1/check", body + "}");
}

TEST_P(Shedding, EachPriorityFillsItsShareAndAShedRequestIsToldSo) {
  testing::RunningService s = start_shedding(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam());
  int admitted = 0;
  for (int i = 0; i < 7; ++i) admitted += check(s, key, "sheddable").status == 200 ? 1 : 0;
  EXPECT_EQ(admitted, 5) << "sheddable fills 10 less the 50 % kept above it";
  HttpReply shed = check(s, key, "sheddable");
  EXPECT_EQ(shed.status, 429) << shed.body;
  EXPECT_NE(shed.body.find(R"("denied_by":"api","shed":true,"priority":"sheddable")"),
            std::string::npos)
      << shed.body;
  EXPECT_EQ(shed.header("x-spillway-shed"), "1");
  EXPECT_NE(shed.header("retry-after"), "");
  // Normal, the default level, fills up to 8: three more.
  admitted = 0;
  for (int i = 0; i < 5; ++i) admitted += check(s, key, "").status == 200 ? 1 : 0;
  EXPECT_EQ(admitted, 3);
  // Critical uses what is left of the whole limit; its denial is the limit's, not shedding.
  admitted = 0;
  for (int i = 0; i < 4; ++i) admitted += check(s, key, "critical").status == 200 ? 1 : 0;
  EXPECT_EQ(admitted, 2);
  HttpReply full = check(s, key, "critical");
  EXPECT_EQ(full.status, 429);
  EXPECT_EQ(full.body.find("\"shed\""), std::string::npos) << full.body;
  EXPECT_EQ(full.header("x-spillway-shed"), "");

  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(spillway_shed_requests_total{layer="api",priority="sheddable"} 3)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(spillway_shed_requests_total{layer="api",priority="normal"} 2)"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find(R"(priority="critical")"), std::string::npos) << metrics;
}

TEST_P(Shedding, AuthAnswersAShedRequest403WithTheShedHeader) {
  testing::RunningService s = start_shedding(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam()) + "-auth";
  const auto auth = [&](const std::string& priority) {
    std::map<std::string, std::string> headers = {{"X-API-Key", key}};
    if (!priority.empty()) headers["X-Spillway-Priority"] = priority;
    return http(s.port(), "GET", "/v1/auth", "", headers);
  };
  for (int i = 0; i < 5; ++i) ASSERT_EQ(auth("sheddable").status, 204) << i;
  HttpReply shed = auth("sheddable");
  EXPECT_EQ(shed.status, 403);
  EXPECT_EQ(shed.header("x-spillway-shed"), "1");
  EXPECT_NE(shed.header("retry-after"), "");
  EXPECT_EQ(auth("critical").status, 204) << "the reserve is there for critical";
  // An unknown level is refused naming the header; nothing is charged by it.
  HttpReply unknown = auth("urgent");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("X-Spillway-Priority: attribute \\\"priority\\\" must be one of "
                              "critical, normal, sheddable"),
            std::string::npos)
      << unknown.body;
  // Sent twice (a client's own next to the proxy's): which one counts is ambiguous, refused.
  testing::HttpConnection connection(s.port());
  connection.send_raw(
      "GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key +
      "\r\nX-Spillway-Priority: critical\r\nX-Spillway-Priority: sheddable\r\n\r\n");
  HttpReply twice = connection.read_reply();
  EXPECT_EQ(twice.status, 400);
  EXPECT_NE(twice.body.find("X-Spillway-Priority must be sent once"), std::string::npos)
      << twice.body;
  // 6 charged (5 sheddable, 1 critical): normal (the default, no header) fills to 8.
  EXPECT_EQ(auth("").status, 204);
  EXPECT_EQ(auth("").status, 204);
  EXPECT_EQ(auth("").status, 403);
}

// X-Spillway-Priority is the trusted proxy's word: from any other peer the request has the
// default level, so a client that reaches /v1/auth itself cannot buy the reserve.
TEST_P(Shedding, AuthReadsThePriorityOnlyFromATrustedProxy) {
  testing::RunningService s = start_shedding(GetParam(), /*trusted=*/false);
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam()) + "-untrusted";
  const std::map<std::string, std::string> claims = {{"X-API-Key", key},
                                                     {"X-Spillway-Priority", "critical"}};
  for (int i = 0; i < 8; ++i) ASSERT_EQ(http(s.port(), "GET", "/v1/auth", "", claims).status, 204);
  HttpReply ninth = http(s.port(), "GET", "/v1/auth", "", claims);
  EXPECT_EQ(ninth.status, 403)
      << "normal (the default) fills 8: the claimed critical did not count";
  EXPECT_EQ(ninth.header("x-spillway-shed"), "1");
  // Nor can it make a 400 of it: the header is not read at all.
  testing::HttpConnection connection(s.port());
  connection.send_raw("GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key +
                      "-2\r\nX-Spillway-Priority: a\r\nX-Spillway-Priority: b\r\n\r\n");
  EXPECT_EQ(connection.read_reply().status, 204);
}

TEST_P(Shedding, ABadPriorityChangesNothing) {
  testing::RunningService s = start_shedding(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam()) + "-bad";
  for (const std::string bad : {R"("CRITICAL")", R"("critical ")", R"(" ")", "1", "null",
                                R"(["critical"])", R"("critical\u0000")"}) {
    HttpReply r = http(s.port(), "POST", "/v1/check",
                       R"({"api_key":")" + key + R"(","priority":)" + bad + "}");
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
    EXPECT_NE(r.body.find("priority"), std::string::npos) << bad << " -> " << r.body;
  }
  HttpReply whole = check(s, key, "critical");
  EXPECT_NE(whole.body.find(R"("remaining":9)"), std::string::npos) << whole.body;
}

INSTANTIATE_TEST_SUITE_P(Backends, Shedding, ::testing::Values("memory", "redis", "cluster"));

}  // namespace
}  // namespace spillway::server
