// server.log_format: json. `spillway serve` (memory backend) with the access log in JSON gets
// admitted and denied decisions, a request with a valid W3C traceparent and ones with malformed
// traceparents, a 404 whose path holds a caller's key, and a bad body; after SIGTERM every line it
// wrote to stderr (startup, access log, stopping) parses as one JSON object with ts, level and
// msg, the access lines carry the decision (allowed, denied_by, layer, plan, latency) and the
// valid trace id, and no caller's key nor any malformed traceparent appears anywhere. Also
// trace_id_of's accepted and refused forms, and validate's refusal of another log_format.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/server/trace_context.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

constexpr char kJsonLogTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kJsonLogSecret[] = "jsonlogSecretKey7f3a";

TEST(TraceContext, TakesTheTraceIdOfAValidTraceparentOnly) {
  EXPECT_EQ(server::trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(server::trace_id_of(" 01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-xyz"),
            "4bf92f3577b34da6a3ce929d0e0e4736");  // a later version may add fields
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",   // 00 has no more fields
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",     // separators
           "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",     // not hex
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01xyz",  // no dash after flags
       }) {
    EXPECT_FALSE(server::trace_id_of(bad).has_value()) << bad;
  }
}

TEST(TraceContext, ValidateRefusesAnotherLogFormatNamingLineAndField) {
  auto config = policy::parse_config("server:\n  listen: 127.0.0.1:0\n  log_format: xml\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_NE(config.error().message.find("line 3"), std::string::npos) << config.error().message;
  EXPECT_NE(config.error().message.find("server.log_format"), std::string::npos)
      << config.error().message;
  auto json = policy::parse_config("server:\n  log_format: json\n");
  ASSERT_TRUE(json.has_value()) << json.error().message;
  EXPECT_TRUE(json->server.log_json);
  EXPECT_FALSE(policy::parse_config("server:\n  log_format: text\n")->server.log_json);
}

TEST(JsonLog, EveryLineIsOneJsonObjectWithTheDecisionAndTraceIdAndNoKey) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("json_log_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path config = dir / "spillway.yaml";
  std::ofstream(config) << "server:\n"
                           "  log_format: json\n"
                           "backend:\n"
                           "  url: memory\n"
                           "layers:\n"
                           "  - name: plan\n"
                           "    key: [api_key]\n"
                           "    by_plan:\n"
                           "      default: free\n"
                           "      plans:\n"
                           "        free: 1/hour\n"
                           "        pro: 100/hour\n";
  testing::ServeProcess spillway({"--config", config.string()}, (dir / "serve.log").string());
  ASSERT_TRUE(spillway.ready()) << spillway.log();
  const std::string body = std::string(R"({"api_key":")") + kJsonLogSecret + R"("})";
  const std::string traceparent = std::string("00-") + kJsonLogTrace + "-00f067aa0ba902b7-01";
  EXPECT_EQ(
      testing::http(spillway.port(), "POST", "/v1/check", body, {{"traceparent", traceparent}})
          .status,
      200);
  const std::string bad_trace = "00-jsonlogBadTrace0000000000000000-00f067aa0ba902b7-01";
  EXPECT_EQ(testing::http(spillway.port(), "POST", "/v1/check", body, {{"traceparent", bad_trace}})
                .status,
            429);
  EXPECT_EQ(testing::http(spillway.port(), "POST", "/v1/check", R"({"api_key":)", {}).status, 400);
  EXPECT_EQ(testing::http(spillway.port(), "GET", std::string("/v1/tenants/") + kJsonLogSecret, "",
                          {{"traceparent", std::string("zz-") + kJsonLogSecret}})
                .status,
            404);
  ASSERT_EQ(spillway.stop(SIGTERM), 0) << spillway.log();

  const std::string log = spillway.log();
  std::istringstream lines(log);
  int requests = 0;
  bool saw_listening = false, saw_allowed = false, saw_denied = false;
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code ec;
    const boost::json::value parsed = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << "not JSON: " << line;
    ASSERT_TRUE(parsed.is_object()) << line;
    const boost::json::object& object = parsed.as_object();
    for (const char* member : {"ts", "level", "msg"}) {
      ASSERT_TRUE(object.contains(member) && object.at(member).is_string())
          << member << ": " << line;
    }
    EXPECT_EQ(object.at("ts").as_string().size(), 24u) << line;  // 2026-12-02T01:02:03.456Z
    const std::string msg(object.at("msg").as_string());
    if (msg.starts_with("spillway serve: listening on")) saw_listening = true;
    if (msg != "request") continue;
    ++requests;
    ASSERT_TRUE(object.contains("latency_us") && object.at("latency_us").is_int64()) << line;
    ASSERT_TRUE(object.contains("status") && object.contains("path") && object.contains("peer"));
    const std::int64_t status = object.at("status").as_int64();
    if (status == 200) {
      saw_allowed = true;
      EXPECT_EQ(object.at("allowed"), true) << line;
      EXPECT_EQ(object.at("layer"), "plan") << line;
      EXPECT_EQ(object.at("plan"), "free") << line;
      EXPECT_EQ(object.at("trace_id"), kJsonLogTrace) << line;
    } else if (status == 429) {
      saw_denied = true;
      EXPECT_EQ(object.at("allowed"), false) << line;
      EXPECT_EQ(object.at("denied_by"), "plan") << line;
      EXPECT_FALSE(object.contains("trace_id")) << "a malformed traceparent is ignored: " << line;
    } else {
      EXPECT_FALSE(object.contains("trace_id")) << line;
    }
  }
  EXPECT_EQ(requests, 4) << log;
  EXPECT_TRUE(saw_listening && saw_allowed && saw_denied) << log;
  EXPECT_EQ(log.find(kJsonLogSecret), std::string::npos) << log;
  EXPECT_EQ(log.find("jsonlogBadTrace"), std::string::npos) << log;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spillway
