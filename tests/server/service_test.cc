// spillway's HTTP API over loopback (docs/SPEC.md §5), on the memory and the Redis backend: bodies,
// statuses and headers of every endpoint, bad input that changes nothing, on_error, and exactly
// the limit admitted under hundreds of simultaneous requests.
#include "src/server/service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "spillway/lease_store.h"
#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

testing::RedisServer& service_redis() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

using Running = testing::RunningService;

Running start_service(const std::string& backend,
                      policy::Config config = policy::default_config()) {
  std::unique_ptr<Store> store = testing::open_test_store(
      testing::backend_url(backend, [] { return service_redis().url(); }), "svc",
      /*connected=*/false);
  if (!store) return {};
  config.server.trusted_proxies = {*policy::parse_cidr("127.0.0.1/32")};
  return testing::start_service(std::move(config), std::move(store));
}

class Api : public ::testing::TestWithParam<std::string> {};

TEST_P(Api, LimitAdmitsThenDeniesWithHeaders) {
  Running s = start_service(GetParam());
  // An hour's window: a window edge between the requests is (almost) impossible.
  const std::string body = R"({"key":"user-1","limit":2,"period":"1h","algorithm":"fixed_window"})";
  HttpReply first = http(s.port(), "POST", "/v1/limit", body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_NE(first.body.find(R"("allowed":true)"), std::string::npos) << first.body;
  EXPECT_NE(first.body.find(R"("remaining":1)"), std::string::npos) << first.body;
  EXPECT_EQ(first.header("x-ratelimit-limit"), "2");
  EXPECT_EQ(first.header("x-ratelimit-remaining"), "1");
  EXPECT_EQ(first.header("ratelimit-policy"), "\"limit\";q=2;w=3600");
  EXPECT_EQ(first.header("retry-after"), "");
  EXPECT_EQ(http(s.port(), "POST", "/v1/limit", body).status, 200);
  HttpReply denied = http(s.port(), "POST", "/v1/limit", body);
  EXPECT_EQ(denied.status, 429);
  EXPECT_NE(denied.body.find(R"("allowed":false)"), std::string::npos);
  EXPECT_FALSE(denied.header("retry-after").empty());
  EXPECT_GE(std::stoi(denied.header("retry-after")), 1);
  EXPECT_NE(denied.header("ratelimit").find("r=0"), std::string::npos);
}

TEST_P(Api, BadLimitRequestsAre400NamingTheFieldAndChangeNothing) {
  Running s = start_service(GetParam());
  struct Case {
    std::string body;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {"{not json", "JSON"},
      {"[1,2]", "object"},
      {R"({"key":"k","limit":"5","period":"1m"})", "limit"},
      {R"({"key":"k","limit":5})", "period"},
      {R"({"key":"k","period":"1m"})", "limit"},
      {R"({"limit":5,"period":"1m"})", "key"},
      {R"({"key":"k","limit":0,"period":"1m"})", "limit"},
      {R"({"key":"k","limit":5,"period":"1m","cost":-1})", "cost"},
      {R"({"key":"k","limit":5,"period":"soon"})", "period"},
      {R"({"key":"k","limit":5,"period":"1m","algorithm":"leaky"})", "algorithm"},
      {R"({"key":"k","limit":5,"period":"1m","colour":"red"})", "colour"},
      {R"({"key":"k","limit":2.5,"period":"1m"})", "limit"},
      {R"({"key":")" + std::string(1025, 'x') + R"(","limit":5,"period":"1m"})", "key"},
      {R"({"key":"k","limit":5,"period":"1m","algorithm":"fixed_window","burst":3})", "burst"},
      {R"({"key":"k","limit":5,"period":"1m","sync":"soon"})", "sync"},
      {R"({"key":"k","limit":5,"period":"1m","sync":true})", "sync"},
      {R"({"key":"k","limit":5,"period":"1m","sync":"lease","reserve":true})", "reserve"},
  };
  for (const Case& c : cases) {
    HttpReply reply = http(s.port(), "POST", "/v1/limit", c.body);
    EXPECT_EQ(reply.status, 400) << c.body;
    EXPECT_NE(reply.body.find(c.mentions), std::string::npos) << c.body << " -> " << reply.body;
  }
  HttpReply ok = http(s.port(), "POST", "/v1/limit", R"({"key":"k","limit":5,"period":"1m"})");
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find(R"("remaining":4)"), std::string::npos) << "bad requests changed state";
}

// "sync":"lease" (docs/SPEC.md §2.3): on a shared backend wrapped as serve wraps it, the key is
// decided from leases, and still admits exactly its limit; on memory it is exact.
TEST_P(Api, LimitWithSyncLeaseAdmitsTheLimitAndNoMore) {
  const bool shared = GetParam() != "memory";
  std::unique_ptr<Store> store =
      testing::open_test_store(GetParam() == "redis"     ? service_redis().url()
                               : GetParam() == "cluster" ? testing::shared_cluster().url()
                                                         : GetParam(),
                               "svc-lease", /*connected=*/true);
  ASSERT_TRUE(store);
  if (shared) store = std::make_unique<LeaseStore>(std::move(store));
  Running s = testing::start_service(policy::default_config(), std::move(store));
  const std::string body =
      R"({"key":"leased","limit":20,"period":"1h","algorithm":"fixed_window","sync":"lease"})";
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    const HttpReply reply = http(s.port(), "POST", "/v1/limit", body);
    ASSERT_TRUE(reply.status == 200 || reply.status == 429) << reply.status << " " << reply.body;
    admitted += reply.status == 200 ? 1 : 0;
  }
  EXPECT_EQ(admitted, 20);
  const HttpReply metrics = http(s.port(), "GET", "/metrics", "");
  EXPECT_EQ(metrics.body.find("spillway_lease_units{state=\"used\"} 20\n") != std::string::npos,
            shared)
      << metrics.body.substr(0, 3000);
}

TEST_P(Api, LimitKeyLengthIsCheckedOnceAndTheErrorNamesTheClientsLength) {
  // The stored key is "/v1/limit:" + key and may be 1024 bytes, so a client's key may be 1014.
  // Keys of 1015..1024 bytes used to pass the first check and fail in the store, with an error
  // naming the stored key's length.
  Running s = start_service(GetParam());
  const auto body = [](std::size_t length) {
    return R"({"key":")" + std::string(length, 'k') + R"(","limit":5,"period":"1m"})";
  };
  HttpReply longest = http(s.port(), "POST", "/v1/limit", body(1014));
  EXPECT_EQ(longest.status, 200) << longest.body;
  for (std::size_t length : {1015u, 1020u, 1024u, 1025u}) {
    HttpReply reply = http(s.port(), "POST", "/v1/limit", body(length));
    EXPECT_EQ(reply.status, 400) << length;
    EXPECT_NE(reply.body.find(R"(key\" must be a string of 1 to 1014 bytes, got )" +
                              std::to_string(length)),
              std::string::npos)
        << reply.body;
  }
  HttpReply empty = http(s.port(), "POST", "/v1/limit", body(0));
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.body.find("got 0"), std::string::npos) << empty.body;
}

TEST_P(Api, CheckRunsTheSeedPolicyAllOrNothing) {
  Running s = start_service(GetParam());
  const std::string search = R"({"ip":"203.0.113.7","api_key":"k1","endpoint":"/search"})";
  for (int i = 0; i < 10; ++i) ASSERT_EQ(http(s.port(), "POST", "/v1/check", search).status, 200);
  HttpReply denied = http(s.port(), "POST", "/v1/check", search);
  EXPECT_EQ(denied.status, 429);
  EXPECT_NE(denied.body.find(R"("denied_by":"endpoint")"), std::string::npos) << denied.body;
  EXPECT_NE(denied.body.find(R"("name":"edge")"), std::string::npos);
  EXPECT_NE(denied.header("ratelimit-policy").find("\"gateway\";q=60;w=60"), std::string::npos)
      << denied.header("ratelimit-policy");
  // The gateway was charged for 10 requests, not 11.
  HttpReply other = http(s.port(), "POST", "/v1/check",
                         R"({"ip":"203.0.113.7","api_key":"k1","endpoint":"/profile"})");
  EXPECT_EQ(other.status, 200);
  EXPECT_NE(other.body.find(R"("denied_by":null)"), std::string::npos);
  EXPECT_NE(other.header("ratelimit").find("\"gateway\";r=49"), std::string::npos)
      << other.header("ratelimit");
}

// A shadow layer in the served policy: never a 429 of its own, "shadow_denied" in the answer,
// counted as result="shadow_denied" in /metrics, and not in the client's RateLimit headers.
TEST_P(Api, AShadowLayerIsReportedAndCountedButNeverDenies) {
  policy::Config config = policy::default_config();
  policy::LayerSpec trial{.name = "trial",
                          .key = {"api_key"},
                          .mode = policy::LayerMode::kShadow,
                          .limit = policy::RateSpec{2, kMicrosPerMinute}};
  config.policy.layers.push_back(trial);
  Running s = start_service(GetParam(), config);
  const std::string profile = R"({"ip":"203.0.113.9","api_key":"k7","endpoint":"/profile"})";
  for (int i = 0; i < 5; ++i) {
    HttpReply r = http(s.port(), "POST", "/v1/check", profile);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find(i < 2 ? R"("shadow_denied":[])" : R"("shadow_denied":["trial"])"),
              std::string::npos)
        << i << ": " << r.body;
    EXPECT_NE(r.body.find(R"("name":"trial","mode":"shadow")"), std::string::npos) << r.body;
    EXPECT_EQ(r.header("ratelimit-policy").find("trial"), std::string::npos)
        << r.header("ratelimit-policy");
  }
  HttpReply nginx =
      http(s.port(), "GET", "/v1/auth", "", {{"X-Api-Key", "k7"}, {"X-Original-URI", "/profile"}});
  EXPECT_EQ(nginx.status, 204);
  EXPECT_EQ(nginx.header("x-spillway-shadow-denied"), "trial");
  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(spillway_decisions_total{layer="trial",result="shadow_denied"} 4)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(spillway_decisions_total{layer="trial",result="allowed"} 2)"),
            std::string::npos);
  EXPECT_EQ(metrics.find(R"(layer="trial",result="denied")"), std::string::npos);
}

// A shadow layer keyed by an attribute the request lacks does not apply: no 400, no 401 for
// nginx (the same layer enforced would answer both).
TEST_P(Api, AShadowLayerNeverTurnsARequestAwayForAMissingAttribute) {
  policy::Config config = policy::default_config();
  config.policy.layers = {
      {.name = "edge", .key = {"ip"}, .limit = policy::RateSpec{100, kMicrosPerMinute}},
      {.name = "trial",
       .key = {"api_key"},
       .mode = policy::LayerMode::kShadow,
       .limit = policy::RateSpec{1, kMicrosPerMinute}}};
  Running s = start_service(GetParam(), config);
  HttpReply check = http(s.port(), "POST", "/v1/check", R"({"ip":"203.0.113.10"})");
  EXPECT_EQ(check.status, 200) << check.body;
  EXPECT_EQ(check.body.find("trial"), std::string::npos) << check.body;
  EXPECT_EQ(http(s.port(), "GET", "/v1/auth").status, 204);
  config.policy.layers[1].mode = policy::LayerMode::kEnforce;
  ASSERT_TRUE(s.service->reload(config));
  EXPECT_EQ(http(s.port(), "POST", "/v1/check", R"({"ip":"203.0.113.10"})").status, 400);
  EXPECT_EQ(http(s.port(), "GET", "/v1/auth").status, 401);
}

TEST_P(Api, CheckRejectsBadAttributes) {
  Running s = start_service(GetParam());
  for (const std::string body :
       {R"({"ip":"300.1.2.3","api_key":"k","endpoint":"/x"})", R"({"ip":"","api_key":"k"})",
        R"({"ip":"1.2.3.4","api_key":5})", R"({"ip":"1.2.3.4","endpoint":"/x"})",
        R"({"ip":"1.2.3.4","api_key":"k","cost":-2})", R"("just a string")"}) {
    EXPECT_EQ(http(s.port(), "POST", "/v1/check", body).status, 400) << body;
  }
}

// The plan a by_plan layer applied is in the layer's answer, and in X-Spillway-Plan for nginx
// (which can pass it on to the application).
TEST_P(Api, AnswersNameThePlanApplied) {
  policy::Config config = policy::default_config();
  config.policy.layers[1].by_plan->assignments = {{"paid-key", "pro"}};
  Running s = start_service(GetParam(), config);
  HttpReply paid = http(s.port(), "POST", "/v1/check",
                        R"({"ip":"203.0.113.11","api_key":"paid-key","endpoint":"/x"})");
  ASSERT_EQ(paid.status, 200) << paid.body;
  EXPECT_NE(paid.body.find(R"("name":"gateway","plan":"pro")"), std::string::npos) << paid.body;
  EXPECT_EQ(paid.body.find(R"("name":"edge","plan")"), std::string::npos) << paid.body;
  HttpReply anonymous = http(s.port(), "POST", "/v1/check",
                             R"({"ip":"203.0.113.11","api_key":"other","endpoint":"/x"})");
  EXPECT_NE(anonymous.body.find(R"("name":"gateway","plan":"free")"), std::string::npos)
      << anonymous.body;
  HttpReply nginx = http(s.port(), "GET", "/v1/auth", "",
                         {{"X-Api-Key", "paid-key"}, {"X-Original-URI", "/profile"}});
  EXPECT_EQ(nginx.status, 204);
  EXPECT_EQ(nginx.header("x-spillway-plan"), "pro");
  config.policy.layers.erase(config.policy.layers.begin() + 1);  // no by_plan layer: no header
  ASSERT_TRUE(s.service->reload(config));
  HttpReply no_plan = http(s.port(), "GET", "/v1/auth", "",
                           {{"X-Api-Key", "paid-key"}, {"X-Original-URI", "/profile"}});
  EXPECT_EQ(no_plan.status, 204);
  EXPECT_EQ(no_plan.header("x-spillway-plan"), "");
}

TEST_P(Api, AuthForNginxUsesHeadersAndTrustedProxies) {
  Running s = start_service(GetParam());
  std::map<std::string, std::string> headers = {{"X-API-Key", "k9"},
                                                {"X-Original-URI", "/export?fmt=csv"},
                                                {"X-Forwarded-For", "198.51.100.9"}};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(http(s.port(), "GET", "/v1/auth", "", headers).status, 204);
  HttpReply denied = http(s.port(), "GET", "/v1/auth", "", headers);
  EXPECT_EQ(denied.status, 403);
  EXPECT_FALSE(denied.header("retry-after").empty());
  EXPECT_EQ(http(s.port(), "GET", "/v1/auth", "", {{"X-Original-URI", "/export"}}).status, 401)
      << "a missing API key is unauthorized (nginx passes 401 through)";
  EXPECT_EQ(
      http(s.port(), "GET", "/v1/auth", "", {{"X-API-Key", "k9"}, {"X-Forwarded-For", "not-an-ip"}})
          .status,
      400);
}

TEST_P(Api, UnknownPathsMethodsAndProbes) {
  Running s = start_service(GetParam());
  EXPECT_EQ(http(s.port(), "GET", "/nope").status, 404);
  HttpReply wrong = http(s.port(), "GET", "/v1/limit");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header("allow"), "POST");
  EXPECT_EQ(http(s.port(), "GET", "/healthz").status, 200);
  // Ready once the backend is reachable (Redis connects in the background after start).
  int ready = 0;
  testing::wait_until([&] {
    ready = http(s.port(), "GET", "/readyz").status;
    return ready == 200;
  });
  EXPECT_EQ(ready, 200);
  (void)http(s.port(), "POST", "/v1/check", R"({"ip":"192.0.2.1","api_key":"k","endpoint":"/x"})");
  HttpReply metrics = http(s.port(), "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("spillway_decisions_total{layer=\"gateway\",result=\"allowed\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("spillway_request_duration_seconds_count"), std::string::npos);
}

TEST_P(Api, HundredsOfSimultaneousRequestsAdmitExactlyTheLimit) {
  Running s = start_service(GetParam());
  std::atomic<int> admitted{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      testing::HttpConnection connection(s.port());
      for (int i = 0; i < 40; ++i) {
        HttpReply r = connection.request(
            "POST", "/v1/limit",
            R"({"key":"hot","limit":100,"period":"1h","algorithm":"sliding_log"})");
        if (r.status == 200)
          ++admitted;
        else if (r.status != 429)
          ++other;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(admitted.load(), 100);
  EXPECT_EQ(other.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Api, ::testing::Values("memory", "redis", "cluster"));

TEST(ApiOnError, RedisDownFollowsOnErrorAndRecovers) {
  testing::RedisServer own;
  for (policy::OnError mode : {policy::OnError::kAllow, policy::OnError::kDeny}) {
    policy::Config config = policy::default_config();
    config.backend.on_error = mode;
    Running s = start_service(own.url(), config);
    const std::string body = R"({"key":"k","limit":100,"period":"1m"})";
    int up = 0;
    testing::wait_until([&] {
      up = http(s.port(), "POST", "/v1/limit", body).status;
      return up == 200;
    });
    ASSERT_EQ(up, 200);
    own.stop();
    const bool allow = mode == policy::OnError::kAllow;
    // Denied because of the backend is 503 (429 would say the client is over its limit).
    HttpReply during = http(s.port(), "POST", "/v1/limit", body);
    EXPECT_EQ(during.status, allow ? 200 : 503);
    EXPECT_NE(during.body.find("backend_error"), std::string::npos);
    EXPECT_EQ(during.header("retry-after"), allow ? "" : "1");
    EXPECT_FALSE(during.header("x-spillway-backend-error").empty());
    HttpReply check = http(s.port(), "POST", "/v1/check", R"({"ip":"192.0.2.1","api_key":"k"})");
    EXPECT_EQ(check.status, allow ? 200 : 503) << check.body;
    if (!allow) {
      EXPECT_NE(check.body.find("\"error\""), std::string::npos) << check.body;
    }
    // nginx's auth_request understands 403 only: a denial stays 403, with the header.
    HttpReply auth =
        http(s.port(), "GET", "/v1/auth", "", {{"X-API-Key", "k"}, {"X-Original-URI", "/x"}});
    EXPECT_EQ(auth.status, allow ? 204 : 403);
    EXPECT_FALSE(auth.header("x-spillway-backend-error").empty());
    const std::string metrics = http(s.port(), "GET", "/metrics").body;
    EXPECT_NE(metrics.find(std::string("answer=\"") + (allow ? "allow" : "deny") + "\""),
              std::string::npos)
        << metrics;
    // Not ready once the client has seen its connections drop (it notices each one's EOF).
    int readiness = 200;
    testing::wait_until([&] {
      readiness = http(s.port(), "GET", "/readyz").status;
      return readiness == 503;
    });
    EXPECT_EQ(readiness, 503);
    EXPECT_NE(http(s.port(), "GET", "/readyz")
                  .body.find(std::string("\"on_error\":\"") + (allow ? "allow" : "deny") + "\""),
              std::string::npos);
    EXPECT_NE(http(s.port(), "GET", "/metrics").body.find("spillway_backend_errors_total"),
              std::string::npos);
    own.start();
    int after = 0;
    testing::wait_until(
        [&] {
          HttpReply r = http(s.port(), "POST", "/v1/limit", body);
          after = r.body.find("backend_error") == std::string::npos ? r.status : 0;
          return after == 200;
        },
        std::chrono::seconds(5));
    EXPECT_EQ(after, 200) << "decisions did not come back after Redis returned";
  }
}

TEST(ApiOnError, FailsOpenByDefault) {
  // A Redis outage must not become an API outage unless the operator asks for it.
  EXPECT_EQ(policy::default_config().backend.on_error, policy::OnError::kAllow);
  auto parsed = policy::parse_config("backend:\n  url: memory\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->backend.on_error, policy::OnError::kAllow);
  const std::uint16_t nobody = testing::free_port();
  Running s = start_service("redis://127.0.0.1:" + std::to_string(nobody));
  HttpReply reply = http(s.port(), "POST", "/v1/check", R"({"ip":"192.0.2.1","api_key":"k"})");
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_NE(reply.body.find("backend_error"), std::string::npos) << reply.body;
  EXPECT_EQ(reply.header("x-spillway-backend-error"), "unavailable");
  EXPECT_NE(http(s.port(), "GET", "/readyz").body.find("\"on_error\":\"allow\""),
            std::string::npos);
}

}  // namespace
}  // namespace spillway::server
