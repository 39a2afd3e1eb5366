// What a client might type to step around an endpoint limit, over the HTTP API (docs/SPEC.md
// §5.1): every spelling of /search spends /search's budget on /v1/auth and /v1/check, malformed
// paths are refused, route templates share one budget per caller, methods refine routes, the
// headers /v1/auth needs are required, and /v1/check names attributes no layer reads.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

testing::RedisServer& redis() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

testing::RunningService start(const std::string& backend, policy::Config config) {
  std::unique_ptr<Store> store =
      testing::open_test_store(backend == "memory" ? backend : redis().url(), "bypass",
                               /*connected=*/true);
  if (!store) return {};
  return testing::start_service(std::move(config), std::move(store));
}

policy::Config config_from(const std::string& yaml) {
  auto config = policy::parse_config(yaml);
  EXPECT_TRUE(config.has_value()) << config.error().message;
  return config ? *config : policy::default_config();
}

HttpReply auth(std::uint16_t port, const std::string& uri, const std::string& key = "k1",
               const std::string& method = "") {
  std::map<std::string, std::string> headers{{"X-API-Key", key}, {"X-Original-URI", uri}};
  if (!method.empty()) headers["X-Original-Method"] = method;
  return http(port, "GET", "/v1/auth", "", headers);
}

class Bypass : public ::testing::TestWithParam<std::string> {};

// The seed policy limits /search to 10 a minute per API key: ten spellings of it are ten
// requests to it, and the eleventh, however written, is denied.
TEST_P(Bypass, EverySpellingOfAnEndpointSpendsItsBudget) {
  testing::RunningService s = start(GetParam(), policy::default_config());
  const std::vector<std::string> spellings = {
      "/search/", "//search",    "/%73earch", "/./search",          "/api/../search",
      "/Search",  "/search?q=x", "/SEARCH/",  "/api/%2e%2e/search", "/search;jsessionid=1"};
  for (const std::string& uri : spellings) {
    HttpReply r = auth(s.port(), uri);
    EXPECT_EQ(r.status, 204) << uri << ": " << r.body;
  }
  HttpReply denied = auth(s.port(), "/search");
  EXPECT_EQ(denied.status, 403) << denied.body;
  // /v1/check with a query in the endpoint: the same budget.
  HttpReply check = http(s.port(), "POST", "/v1/check",
                         R"({"ip":"192.0.2.1","api_key":"k1","endpoint":"/search?q=x"})");
  ASSERT_EQ(check.status, 429) << check.body;
  EXPECT_NE(check.body.find(R"("denied_by":"endpoint")"), std::string::npos) << check.body;
  // Another endpoint is not affected.
  EXPECT_EQ(auth(s.port(), "/export").status, 204);
}

// A layer keyed by the path without being an endpoint layer: spellings and queries share a key.
TEST_P(Bypass, ALayerKeyedByThePathKeysItsCanonicalForm) {
  testing::RunningService s =
      start(GetParam(),
            config_from("layers:\n  - {name: per_path, key: [ip, endpoint], limit: 3/min}\n"));
  for (const std::string uri : {"/search?a=1", "/search?a=2", "//Search/"}) {
    EXPECT_EQ(auth(s.port(), uri).status, 204) << uri;
  }
  EXPECT_EQ(auth(s.port(), "/search?a=3").status, 403);
  EXPECT_EQ(auth(s.port(), "/other").status, 204);
}

TEST_P(Bypass, MalformedPathsAreRefusedAndChargeNothing) {
  testing::RunningService s = start(GetParam(), policy::default_config());
  for (const std::string uri :
       {"/%zz", "/search%", "/search%2", "/%00search", "/a%0ab", "search"}) {
    HttpReply r = auth(s.port(), uri, "k2");
    EXPECT_EQ(r.status, 400) << uri << ": " << r.body;
    EXPECT_NE(r.body.find("X-Original-URI"), std::string::npos) << r.body;
    HttpReply c = http(s.port(), "POST", "/v1/check",
                       R"({"ip":"192.0.2.1","api_key":"k2","endpoint":")" + uri + R"("})");
    EXPECT_EQ(c.status, 400) << uri << ": " << c.body;
    EXPECT_NE(c.body.find("\\\"endpoint\\\""), std::string::npos) << c.body;
  }
  // Nothing was charged: all ten /search requests of k2 are still there.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(auth(s.port(), "/search", "k2").status, 204) << i;
  EXPECT_EQ(auth(s.port(), "/search", "k2").status, 403);
}

TEST_P(Bypass, AuthWithoutTheOriginalUriIsRefusedWhenEndpointsAreLimited) {
  testing::RunningService s = start(GetParam(), policy::default_config());
  HttpReply r = http(s.port(), "GET", "/v1/auth", "", {{"X-API-Key", "k1"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("X-Original-URI is required"), std::string::npos) << r.body;
  // Sent twice: which one the proxy meant is ambiguous.
  testing::HttpConnection connection(s.port());
  connection.send_raw(
      "GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-API-Key: k1\r\nX-Original-URI: /other\r\n"
      "X-Original-URI: /search\r\n\r\n");
  HttpReply twice = connection.read_reply();
  EXPECT_EQ(twice.status, 400) << twice.body;
  EXPECT_NE(twice.body.find("X-Original-URI must be sent once"), std::string::npos) << twice.body;
  // A policy without endpoint limits does not need it.
  testing::RunningService edge_only =
      start(GetParam(), config_from("layers:\n  - {name: edge, key: [ip], limit: 5/min}\n"));
  EXPECT_EQ(http(edge_only.port(), "GET", "/v1/auth").status, 204);
}

TEST_P(Bypass, RouteTemplatesShareOneBudgetPerCaller) {
  testing::RunningService s = start(GetParam(), config_from(R"(
layers:
  - name: endpoint
    key: [api_key, endpoint]
    by_endpoint:
      limits:
        "/orders/{id}/export": 2/min
        "/files/**": 3/min
        "POST /search": 1/min
        "/search": 4/min
)"));
  HttpReply first = auth(s.port(), "/orders/1/export");
  EXPECT_EQ(first.status, 204) << first.body;
  EXPECT_EQ(auth(s.port(), "/orders/2/export/").status, 204);
  EXPECT_EQ(auth(s.port(), "/orders/3/export").status, 403);
  EXPECT_EQ(auth(s.port(), "/orders/3/export", "other-key").status, 204);  // per caller
  for (const std::string uri : {"/files/a", "/files/a/b", "//files/c/../d"}) {
    EXPECT_EQ(auth(s.port(), uri).status, 204) << uri;
  }
  EXPECT_EQ(auth(s.port(), "/files/z").status, 403);
  EXPECT_EQ(auth(s.port(), "/files").status, 204);  // ** needs a segment: no route
  // POST /search has its own budget of 1; GET /search the route for any method.
  EXPECT_EQ(auth(s.port(), "/search", "k1", "post").status, 204);
  EXPECT_EQ(auth(s.port(), "/search", "k1", "POST").status, 403);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(auth(s.port(), "/search", "k1", "GET").status, 204) << i;
  EXPECT_EQ(auth(s.port(), "/search", "k1", "GET").status, 403);
  // Without X-Original-Method, routes that name a method cannot be chosen: refused.
  HttpReply no_method = auth(s.port(), "/search", "k3");
  EXPECT_EQ(no_method.status, 400) << no_method.body;
  EXPECT_NE(no_method.body.find("X-Original-Method"), std::string::npos) << no_method.body;
  // /v1/check: the "method" attribute.
  HttpReply post = http(s.port(), "POST", "/v1/check",
                        R"({"api_key":"k4","endpoint":"/Search/","method":"POST"})");
  EXPECT_EQ(post.status, 200) << post.body;
  post = http(s.port(), "POST", "/v1/check",
              R"({"api_key":"k4","endpoint":"/search","method":"POST"})");
  EXPECT_EQ(post.status, 429) << post.body;
}

TEST_P(Bypass, CaseSensitiveLayersKeepCase) {
  testing::RunningService s = start(GetParam(), config_from(R"(
layers:
  - name: endpoint
    key: [api_key, endpoint]
    by_endpoint: {limits: {/Search: 1/min}, case_sensitive: true}
)"));
  EXPECT_EQ(auth(s.port(), "/Search/").status, 204);
  EXPECT_EQ(auth(s.port(), "/Search").status, 403);
  EXPECT_EQ(auth(s.port(), "/search").status, 204);  // another path to this API: not limited
}

TEST_P(Bypass, CheckRefusesAttributesNoLayerReads) {
  testing::RunningService s = start(GetParam(), policy::default_config());
  HttpReply typo = http(s.port(), "POST", "/v1/check",
                        R"({"ip":"192.0.2.1","api_key":"k5","endpont":"/search"})");
  EXPECT_EQ(typo.status, 400) << typo.body;
  EXPECT_NE(typo.body.find(R"(unknown attribute \"endpont\")"), std::string::npos) << typo.body;
  EXPECT_NE(typo.body.find("api_key, endpoint, ip"), std::string::npos) << typo.body;
  // Nothing was charged by the refused request: k5 still has all ten /search requests.
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(http(s.port(), "POST", "/v1/check",
                   R"({"ip":"192.0.2.1","api_key":"k5","endpoint":"/search"})")
                  .status,
              200)
        << i;
  }
  // server.unknown_attributes: ignore keeps the old behaviour.
  policy::Config lenient = policy::default_config();
  lenient.server.reject_unknown_attributes = false;
  testing::RunningService t = start(GetParam(), lenient);
  EXPECT_EQ(http(t.port(), "POST", "/v1/check",
                 R"({"ip":"192.0.2.1","api_key":"k5","endpont":"/search"})")
                .status,
            200);
}

TEST_P(Bypass, AuthNamesAttributesItCannotProvide) {
  testing::RunningService s =
      start(GetParam(), config_from("layers:\n  - {name: edge, key: [ipaddr], limit: 5/min}\n"));
  HttpReply r = http(s.port(), "GET", "/v1/auth");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find(R"(attribute \"ipaddr\" is required (layer edge))"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("/v1/auth provides only ip"), std::string::npos) << r.body;
}

TEST_P(Bypass, HeadWorksWhereGetDoesAndTheRootIsAnIndex) {
  testing::RunningService s = start(GetParam(), policy::default_config());
  for (const std::string path :
       {"/healthz", "/readyz", "/metrics", "/v1/stats", "/dashboard", "/"}) {
    HttpReply get = http(s.port(), "GET", path);
    EXPECT_NE(get.status, 405) << path;
    HttpReply head = http(s.port(), "HEAD", path);
    EXPECT_EQ(head.status, get.status) << path;
    if (path == "/" || path == "/healthz" || path == "/dashboard") {  // bodies that do not change
      EXPECT_EQ(head.header("content-length"), get.header("content-length")) << path;
    }
    EXPECT_TRUE(head.body.empty()) << path;
  }
  HttpReply index = http(s.port(), "GET", "/");
  EXPECT_NE(index.body.find("POST /v1/check"), std::string::npos) << index.body;
  EXPECT_NE(index.body.find("/dashboard"), std::string::npos) << index.body;
}

// GET / lists the answers /v1/auth really gives, each one seen here, and none it never gives.
TEST_P(Bypass, TheIndexListsAuthsRealAnswers) {
  testing::RunningService s =
      start(GetParam(), config_from("layers:\n"
                                    "  - {name: per_key, key: [api_key], limit: 1/min}\n"
                                    "  - {name: per_endpoint, key: [endpoint], limit: 100/min}\n"));
  const std::map<std::string, std::string> full = {{"X-API-Key", "index-k"},
                                                   {"X-Original-URI", "/a"}};
  std::vector<int> seen = {
      http(s.port(), "GET", "/v1/auth", "", full).status,
      http(s.port(), "GET", "/v1/auth", "", full).status,
      http(s.port(), "GET", "/v1/auth", "", {{"X-Original-URI", "/a"}}).status,
      http(s.port(), "GET", "/v1/auth", "", {{"X-API-Key", "index-k2"}}).status};
  EXPECT_EQ(seen, (std::vector<int>{204, 403, 401, 400}));
  const std::string body = http(s.port(), "GET", "/").body;
  const std::size_t from = body.find("GET  /v1/auth");
  ASSERT_NE(from, std::string::npos) << body;
  const std::string auth = body.substr(from, body.find("\nPOST /v1/commit") - from);
  for (const char* answer :
       {"204 admitted", "403 denied", "401 X-API-Key missing", "400 X-Original-URI missing"}) {
    EXPECT_NE(auth.find(answer), std::string::npos) << answer << " not in:\n" << auth;
  }
  EXPECT_EQ(auth.find("429/403"), std::string::npos) << auth;  // /v1/auth never answers 429
}

INSTANTIATE_TEST_SUITE_P(Backends, Bypass, ::testing::Values("memory", "redis"));

// A trusted proxy that sets X-Real-IP while the config reads X-Forwarded-For: all its clients
// share the proxy's budget, and the log says so once, naming the setting to change.
TEST(ClientHeaderSetting, AProxySendingAnotherHeaderIsLogged) {
  policy::Config config = config_from(
      "server: {trusted_proxies: [127.0.0.1/32]}\n"
      "layers:\n  - {name: edge, key: [ip], limit: 2/min}\n");
  testing::RunningService s = start("memory", config);
  ::testing::internal::CaptureStderr();
  std::vector<int> statuses;
  for (const char* client : {"198.51.100.1", "198.51.100.2", "198.51.100.3"}) {
    statuses.push_back(http(s.port(), "GET", "/v1/auth", "", {{"X-Real-IP", client}}).status);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(statuses, (std::vector<int>{204, 204, 403}));  // one budget: the proxy's
  EXPECT_NE(log.find("trusted proxy 127.0.0.1 sent x-real-ip but server.client_ip_header is "
                     "x-forwarded-for"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("set server.client_ip_header: x-real-ip"), std::string::npos) << log;
  EXPECT_EQ(log.find("trusted proxy", log.find("trusted proxy") + 1), std::string::npos)
      << "said once a minute at most: " << log;
}

}  // namespace
}  // namespace spillway::server
