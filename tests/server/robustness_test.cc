// Mutation tests (rapidcheck; random, not coverage-guided) of what untrusted input reaches: the
// config loader, the request handlers and the HTTP parser. Nothing may crash (ASan/UBSan run
// these too), every error must be a clear 4xx or a named config line, and the server keeps
// serving.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <future>

#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "src/server/service.h"
#include "tests/support/http_client.h"

namespace spillway::server {
namespace {

// Applies 1..8 random edits (replace, insert, erase a byte; cut the tail) to a valid input.
std::string mutate(std::string text) {
  const int edits = *rc::gen::inRange(1, 9);
  const std::string special = "{}[]:,\"\\\n\t -#&*!|>%@`'0123456789/";
  for (int i = 0; i < edits && !text.empty(); ++i) {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, text.size());
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        text[at] = special[*rc::gen::inRange<std::size_t>(0, special.size())];
        break;
      case 1:
        text.insert(at, 1, static_cast<char>(*rc::gen::inRange(0, 256)));
        break;
      case 2:
        text.erase(at, 1);
        break;
      default:
        text.resize(at);
        break;
    }
  }
  return text;
}

const char* kExampleConfig = R"(server:
  listen: 127.0.0.1:8080
  threads: 2
  trusted_proxies: [127.0.0.1/32, 10.0.0.0/8]
  ipv6_prefix: 64
backend:
  url: memory
  timeout: 50ms
  on_error: deny
layers:
  - {name: edge, key: [ip], algorithm: gcra, limit: 1000/min, burst: 100}
  - name: gateway
    key: [api_key]
    by_plan: {default: free, plans: {free: 60/min, pro: 600/min}, keys: {k1: pro}}
  - name: endpoint
    key: [api_key, endpoint]
    by_endpoint: {limits: {/search: 10/min, /export: 5/min}}
)";

RC_GTEST_PROP(Robustness, MutatedConfigsParseOrNameALine, ()) {
  const std::string text = mutate(kExampleConfig);
  auto config = policy::parse_config(text);
  if (!config) {
    RC_ASSERT(config.error().message.rfind("line ", 0) == 0);
  } else {
    RC_ASSERT(policy::Policy::make(config->policy).has_value());  // what validates can be built
  }
}

// Calls the handler directly and waits for its single answer.
HttpResponse ask(Service& service, HttpRequest request) {
  std::promise<HttpResponse> answer;
  auto future = answer.get_future();
  auto calls = std::make_shared<std::atomic<int>>(0);
  service.handle(std::move(request), [&answer, calls](HttpResponse r) {
    if (calls->fetch_add(1) == 0) answer.set_value(std::move(r));
  });
  HttpResponse response = future.get();
  RC_ASSERT(calls->load() == 1);
  return response;
}

RC_GTEST_PROP(Robustness, MutatedRequestsGetOneClearAnswer, ()) {
  static std::unique_ptr<Service> service =
      std::move(*Service::make(policy::default_config(), std::make_unique<MemoryStore>()));
  const std::vector<std::pair<std::string, std::string>> valid = {
      {"/v1/limit", R"({"key":"k","limit":5,"period":"1m","algorithm":"gcra","burst":3,"cost":1})"},
      {"/v1/check", R"({"ip":"2001:db8::1","api_key":"k1","endpoint":"/search","cost":2})"},
  };
  const auto& [path, body] = *rc::gen::elementOf(valid);
  HttpRequest request{.method = *rc::gen::element<std::string>("POST", "POST", "GET", "PUT", ""),
                      .target = *rc::gen::element<std::string>(
                          std::string(path), path + "?x", std::string("/v1/%00"), std::string("/")),
                      .body = mutate(body),
                      .peer_address = "127.0.0.1"};
  const HttpResponse response = ask(*service, std::move(request));
  RC_ASSERT(response.status >= 200);
  RC_ASSERT(response.status < 500);
  if (response.status == 400) RC_ASSERT(response.body.find("\"error\"") != std::string::npos);
}

RC_GTEST_PROP(Robustness, MutatedAuthHeadersGetOneClearAnswer, ()) {
  static std::unique_ptr<Service> service =
      std::move(*Service::make(policy::default_config(), std::make_unique<MemoryStore>()));
  HttpRequest request{
      .method = "GET",
      .target = "/v1/auth",
      .headers = {{"x-api-key", mutate("key-123")},
                  {"x-original-uri", mutate("/search?q=1")},
                  {"x-forwarded-for", mutate("198.51.100.7, 10.0.0.1")}},
      .peer_address = *rc::gen::element<std::string>("127.0.0.1", "::1", "10.0.0.1")};
  const HttpResponse response = ask(*service, std::move(request));
  RC_ASSERT(response.status == 204 || response.status == 403 || response.status == 400 ||
            response.status == 401);
}

TEST(Robustness, MutatedHttpBytesNeverStopTheServer) {
  auto service =
      std::move(*Service::make(policy::default_config(), std::make_unique<MemoryStore>()));
  Service* raw = service.get();
  auto server = std::move(*HttpServer::start(
      {.host = "127.0.0.1",
       .port = 0,
       .read_timeout = std::chrono::milliseconds(200),
       .access_log = [](std::string_view) {}},
      [raw](HttpRequest r, Responder respond) { raw->handle(std::move(r), std::move(respond)); }));
  const std::string valid =
      "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 47\r\n\r\n"
      R"({"ip":"192.0.2.1","api_key":"k","endpoint":"/"})";
  const bool ok = rc::check("mutated HTTP requests", [&] {
    const std::string bytes = mutate(valid);
    {
      testing::HttpConnection connection(server->port());
      connection.send_raw(bytes);
      ::shutdown(connection.fd(), SHUT_WR);
      const testing::HttpReply reply = connection.read_reply();
      RC_ASSERT(reply.status == 0 || reply.status < 500 || reply.status == 503);
    }
    // The server still answers a well-formed request.
    RC_ASSERT(testing::http(server->port(), "GET", "/healthz").status == 200);
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace spillway::server
