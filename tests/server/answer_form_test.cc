// The form of the HTTP answers, over loopback: a body that is not JSON is named with the byte
// where it went wrong (and charges nothing); answers without a body (nginx's 204 and 403, any
// empty body) carry no Content-Type, while JSON answers and HEAD keep theirs.
#include <gtest/gtest.h>

#include <string>

#include "spillway/memory_store.h"
#include "src/server/http_server.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

// One layer: 2 per minute per client IP.
testing::RunningService start_two_per_minute() {
  policy::Config config = policy::default_config();
  config.policy.layers = {
      {.name = "edge", .key = {"ip"}, .limit = policy::RateSpec{2, kMicrosPerMinute}}};
  return testing::start_service(std::move(config), std::make_unique<MemoryStore>());
}

TEST(AnswerForm, AJsonSyntaxErrorNamesItsByteOffsetAndChargesNothing) {
  testing::RunningService s = start_two_per_minute();
  struct Case {
    std::string body;
    std::string says;
  };
  for (const Case& c : {
           // the 'x' where a key must be, 0-based
           Case{R"({"ip":"203.0.113.7",x})", "body is not valid JSON at byte 20: syntax error"},
           // ends too soon: the offset is the body's length
           Case{R"({"ip":"203.0.113.7")", "body is not valid JSON at byte 19: incomplete JSON"},
           // something after the object
           Case{R"({"ip":"203.0.113.7"} {})", "body is not valid JSON at byte 21: extra data"},
           Case{"", "body is not valid JSON at byte 0: incomplete JSON"},
       }) {
    const HttpReply reply = http(s.port(), "POST", "/v1/check", c.body);
    EXPECT_EQ(reply.status, 400) << c.body;
    EXPECT_EQ(reply.body, "{\"error\":\"" + c.says + "\"}") << c.body;
  }
  // None of them charged the client: both of its 2 are left.
  const HttpReply first = http(s.port(), "POST", "/v1/check", R"({"ip":"203.0.113.7"})");
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_NE(first.body.find("\"remaining\":1"), std::string::npos) << first.body;
  // Valid JSON that is not an object keeps its own message.
  EXPECT_EQ(http(s.port(), "POST", "/v1/check", "[1]").body,
            R"({"error":"body must be a JSON object"})");
}

TEST(AnswerForm, NginxAnswersWithoutABodyCarryNoContentType) {
  testing::RunningService s = start_two_per_minute();
  for (int i = 0; i < 2; ++i) {
    const HttpReply allowed = http(s.port(), "GET", "/v1/auth");
    ASSERT_EQ(allowed.status, 204);
    EXPECT_EQ(allowed.headers.count("content-type"), 0u) << allowed.header("content-type");
  }
  const HttpReply denied = http(s.port(), "GET", "/v1/auth");
  ASSERT_EQ(denied.status, 403);
  EXPECT_EQ(denied.body, "");
  EXPECT_EQ(denied.headers.count("content-type"), 0u) << denied.header("content-type");
  EXPECT_EQ(denied.header("content-length"), "0");
  // The JSON endpoints keep their type.
  const HttpReply check = http(s.port(), "POST", "/v1/check", R"({"ip":"203.0.113.8"})");
  EXPECT_EQ(check.status, 200);
  EXPECT_EQ(check.header("content-type"), "application/json");
}

// Below the service: whatever a handler's type, no body means no Content-Type; HEAD keeps the
// type of the body that GET would send.
TEST(AnswerForm, TheServerWritesContentTypeOnlyForABody) {
  auto server = HttpServer::start(
      {.host = "127.0.0.1", .port = 0, .threads = 1, .access_log = [](std::string_view) {}},
      [](HttpRequest request, Responder respond) {
        HttpResponse response{.content_type = "text/plain"};
        if (request.target == "/empty") {
          response.status = 200;
        } else if (request.target == "/nothing") {
          response.status = 204;
          response.body = "dropped";
        } else {
          response.body = "text";
        }
        respond(std::move(response));
      });
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const std::uint16_t port = (*server)->port();
  const HttpReply empty = http(port, "GET", "/empty");
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.headers.count("content-type"), 0u) << empty.header("content-type");
  const HttpReply nothing = http(port, "GET", "/nothing");
  EXPECT_EQ(nothing.status, 204);
  EXPECT_EQ(nothing.headers.count("content-type"), 0u) << nothing.header("content-type");
  EXPECT_EQ(http(port, "GET", "/text").header("content-type"), "text/plain");
  const HttpReply head = http(port, "HEAD", "/text");
  EXPECT_EQ(head.header("content-type"), "text/plain");
  EXPECT_EQ(head.header("content-length"), "4");
}

}  // namespace
}  // namespace spillway::server
