// `spillway inspect --admin` and the admin API's GET /v1/inspect (src/server/admin_service.h,
// src/server/inspection.h), on the memory backend, whose state lives in the serving process:
// - InspectAdmin (the spillway binary): after N checks on /v1/check, inspect through the admin
//   API shows limit - N left, in text and in --json (the server's object), with the plan a tenant
//   record set a moment before; reading charges nothing (the next check has exactly one less);
//   the caller's key is never in serve's log; every bad input of the endpoint is a 400 naming
//   what is wrong, a missing or wrong token a 401, another method a 405 with Allow; the CLI says
//   which of its errors an operator has (unreachable, token refused, an older server or not the
//   admin listener, the server's 400 passed through) and never prints the token.
// - InspectAdminRedis (the spillway binary and a redis-server): the server names the Redis keys
//   and reads the state that `spillway inspect` reading Redis itself does.
// - InspectionJson (unit): the JSON object read back as it was written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/server/inspection.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/text_lines.h"

namespace spillway {
namespace {

namespace json = boost::json;

constexpr std::string_view kInspectAdminToken = "inspect-tok-5e8d2a9c71";
// The caller's key: the admin caller sent it and gets it back in the layer's key, but no log
// line may carry it.
constexpr std::string_view kInspectAdminKey = "sk-inspect-7f3b91c2";

// A directory of one test's files, removed at the end of the test.
class InspectAdminDir {
 public:
  // `backend`: backend.url (none: the memory backend).
  explicit InspectAdminDir(const std::string& name, const std::string& backend = "")
      : dir_("/tmp/spillway_inspect_admin_" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(tokens()) << "ops " << kInspectAdminToken << "\n";
    std::filesystem::permissions(
        tokens(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    // Rates per day: nothing refills while a test runs, so what is left is exact.
    std::ofstream(config()) << (backend.empty() ? "" : "backend:\n  url: " + backend + "\n")
                            << "server:\n  admin_listen: \"127.0.0.1:0\"\n  admin_token_file: "
                            << tokens()
                            << "\n  log_format: json\n"
                               "layers:\n"
                               "  - name: gateway\n    key: [api_key]\n    by_plan:\n"
                               "      source: store\n      plans: {free: 5/day, pro: 100/day}\n"
                               "      default: free\n"
                               "  - name: per_ip\n    key: [ip]\n    limit: 10/day\n";
  }
  ~InspectAdminDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  InspectAdminDir(const InspectAdminDir&) = delete;
  InspectAdminDir& operator=(const InspectAdminDir&) = delete;

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string tokens() const { return path("tokens"); }
  std::string config() const { return path("config.yaml"); }

 private:
  std::string dir_;
};

std::map<std::string, std::string> inspect_admin_bearer(std::string_view token) {
  return {{"Authorization", "Bearer " + std::string(token)}};
}

// POST /v1/check for the test's caller; the answer's top-level "remaining", or -1 when denied
// or not answered 200.
std::int64_t inspect_admin_check(std::uint16_t port) {
  const testing::HttpReply reply =
      testing::http(port, "POST", "/v1/check",
                    "{\"api_key\":\"" + std::string(kInspectAdminKey) + "\",\"ip\":\"10.1.2.3\"}");
  if (reply.status != 200) return -1;
  const json::object body = json::parse(reply.body).as_object();
  return body.at("remaining").as_int64();
}

// The "now:" values of an inspection's text, in order.
std::vector<std::string> inspect_admin_now_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (const std::string& line : testing::lines_of(text)) {
    if (line.starts_with("  now:         ")) lines.push_back(line.substr(15));
  }
  return lines;
}

TEST(InspectAdmin, ShowsWhatChecksLeftInTextAndJsonAndChargesNothing) {
  InspectAdminDir dir("left");
  testing::ServeProcess serve({"--config", dir.config()}, dir.path("serve.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t admin_port = serve.admin_port();
  ASSERT_NE(admin_port, 0) << serve.log();
  for (std::int64_t sent = 1; sent <= 3; ++sent) {
    ASSERT_EQ(inspect_admin_check(serve.port()), 5 - sent) << serve.log();
  }
  const std::string inspect = "inspect --admin http://127.0.0.1:" + std::to_string(admin_port) +
                              " --token-file " + dir.tokens() +
                              " api_key=" + std::string(kInspectAdminKey) + " ip=10.1.2.3";

  // Text: the server's state, as `spillway inspect` prints it, after a line naming the server.
  const testing::BinaryRun text = testing::run_binary(inspect);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.err, "");
  const std::vector<std::string> lines = testing::lines_of(text.out);
  ASSERT_GE(lines.size(), 2u) << text.out;
  EXPECT_EQ(lines[0], "server http://127.0.0.1:" + std::to_string(admin_port) +
                          " (its policy, tenant records and state)");
  EXPECT_EQ(lines[1], "backend memory");
  EXPECT_NE(text.out.find("layer gateway, plan free: gcra 5/1d burst 5\n  key:         gateway:" +
                          std::to_string(kInspectAdminKey.size()) + ":" +
                          std::string(kInspectAdminKey) + "\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("layer per_ip: gcra 10/1d burst 10\n  key:         per_ip:8:10.1.2.3\n"),
            std::string::npos)
      << text.out;
  const std::vector<std::string> now = inspect_admin_now_lines(text.out);
  ASSERT_EQ(now.size(), 2u) << text.out;
  EXPECT_TRUE(now[0].starts_with("2 of 5 left; idle (full) again in ")) << now[0];
  EXPECT_TRUE(now[1].starts_with("7 of 10 left; idle (full) again in ")) << now[1];

  // --json: the server's object as it is.
  const testing::BinaryRun as_json = testing::run_binary(inspect + " --json");
  ASSERT_EQ(as_json.status, 0) << as_json.err;
  ASSERT_EQ(testing::lines_of(as_json.out).size(), 1u) << as_json.out;
  const json::object object = json::parse(as_json.out).as_object();
  EXPECT_EQ(object.at("backend").as_string(), "memory");
  EXPECT_FALSE(object.at("plans_from_config").as_bool());
  EXPECT_FALSE(object.contains("key_names"));
  const json::array& layers = object.at("layers").as_array();
  ASSERT_EQ(layers.size(), 2u) << as_json.out;
  const json::object& gateway = layers[0].as_object();
  EXPECT_EQ(gateway.at("name").as_string(), "gateway");
  EXPECT_EQ(gateway.at("plan").as_string(), "free");
  EXPECT_EQ(gateway.at("limit").as_string(), "gcra 5/1d burst 5");
  EXPECT_FALSE(gateway.at("blocked").as_bool());
  EXPECT_FALSE(gateway.contains("redis_key"));
  EXPECT_EQ(gateway.at("now").at("remaining").as_int64(), 2);
  EXPECT_EQ(gateway.at("now").at("limit").as_int64(), 5);
  EXPECT_GT(gateway.at("now").at("reset_after_us").as_int64(), 0);
  const json::object& per_ip = layers[1].as_object();
  EXPECT_EQ(per_ip.at("key").as_string(), "per_ip:8:10.1.2.3");
  EXPECT_TRUE(per_ip.at("plan").is_null());
  EXPECT_EQ(per_ip.at("now").at("remaining").as_int64(), 7);

  // Reading charges nothing: after more reads (the CLI's and the endpoint's own, with another
  // spelling of the address), the next check has exactly one less than the last one had.
  for (int i = 0; i < 3; ++i) {
    const testing::HttpReply read = testing::http(
        admin_port, "GET",
        "/v1/inspect?api_key=" + std::string(kInspectAdminKey) + "&ip=%3A%3Affff%3A10.1.2.3", "",
        inspect_admin_bearer(kInspectAdminToken));
    ASSERT_EQ(read.status, 200) << read.body;
    EXPECT_EQ(json::parse(read.body).at("layers").at(1).at("now").at("remaining").as_int64(), 7)
        << read.body;
  }
  EXPECT_EQ(inspect_admin_check(serve.port()), 1);
  EXPECT_TRUE(
      inspect_admin_now_lines(testing::run_binary(inspect).out).at(0).starts_with("1 of 5 left;"));

  // The live tenant records: a plan set through the admin API a moment ago is the one shown.
  const testing::HttpReply put =
      testing::http(admin_port, "PUT", "/v1/tenants/" + std::string(kInspectAdminKey),
                    "{\"plan\":\"pro\"}", inspect_admin_bearer(kInspectAdminToken));
  ASSERT_EQ(put.status, 200) << put.body;
  const testing::BinaryRun pro = testing::run_binary(inspect);
  ASSERT_EQ(pro.status, 0) << pro.err;
  EXPECT_NE(pro.out.find("layer gateway, plan pro: gcra 100/1d burst 100\n"), std::string::npos)
      << pro.out;
  EXPECT_TRUE(inspect_admin_now_lines(pro.out).at(0).starts_with("100 of 100 left;")) << pro.out;

  // The access log (on, as JSON) names the endpoint, never the query that held the key.
  ASSERT_EQ(serve.stop(SIGTERM), 0);
  const std::string log = serve.log();
  EXPECT_NE(log.find("\"path\":\"/v1/inspect\""), std::string::npos) << log;
  EXPECT_EQ(log.find(kInspectAdminKey), std::string::npos) << log;
}

TEST(InspectAdmin, BadInputsAreNamedAndTheCliSaysWhichErrorItIs) {
  InspectAdminDir dir("bad");
  testing::ServeProcess serve({"--config", dir.config()}, dir.path("serve.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t admin_port = serve.admin_port();
  ASSERT_NE(admin_port, 0) << serve.log();
  const std::string key(kInspectAdminKey);
  const std::string long_value(1025, 'k');
  for (const auto& [target, message] : std::vector<std::pair<std::string, std::string>>{
           {"/v1/inspect", "give the request's attributes as query parameters"},
           {"/v1/inspect?", "give the request's attributes as query parameters"},
           {"/v1/inspect?api_key=" + key + "&&ip=10.0.0.1", "an empty parameter"},
           {"/v1/inspect?api_key=" + key + "&", "an empty parameter"},
           {"/v1/inspect?ip=10.0.0.1&" + key, "parameter 2 has no '='"},
           {"/v1/inspect?=" + key, "a parameter has an empty name"},
           {"/v1/inspect?api_key=a&api_key=b", "attribute \"api_key\" is given twice"},
           {"/v1/inspect?ip=10.0.0.1&ip=%31%30.0.0.1", "attribute \"ip\" is given twice"},
           {"/v1/inspect?tier=gold", "unknown attribute \"tier\": the policy uses api_key, ip"},
           {"/v1/inspect?cost=1", "unknown attribute \"cost\""},
           {"/v1/inspect?api_key=%zz", "attribute \"api_key\" has a malformed %-escape"},
           {"/v1/inspect?%zz=1", "a parameter's name has a malformed %-escape"},
           {"/v1/inspect?api_key=" + long_value, "is 1025 bytes, over the 1024-byte bound"},
           {"/v1/inspect?api_key=a&ip=not-an-address", "\"not-an-address\" is not an IP address"},
           {"/v1/inspect?ip=10.0.0.1", "attribute \"api_key\" is required (layer gateway)"},
           {"/v1/inspect?api_key=&ip=10.0.0.1", "attribute \"api_key\" is required"},
       }) {
    const testing::HttpReply reply =
        testing::http(admin_port, "GET", target, "", inspect_admin_bearer(kInspectAdminToken));
    EXPECT_EQ(reply.status, 400) << target << ": " << reply.body;
    const std::string error(json::parse(reply.body).at("error").as_string());
    EXPECT_NE(error.find(message), std::string::npos) << target << ": " << error;
    // A value is never quoted back in an error (it may be a caller's key).
    EXPECT_EQ(reply.body.find(key), std::string::npos) << target << ": " << reply.body;
  }
  const std::string good = "/v1/inspect?api_key=" + key + "&ip=10.0.0.1";
  for (const std::string method : {"POST", "PUT", "DELETE", "PATCH"}) {
    const testing::HttpReply reply =
        testing::http(admin_port, method, good, "", inspect_admin_bearer(kInspectAdminToken));
    EXPECT_EQ(reply.status, 405) << method << ": " << reply.body;
    EXPECT_EQ(reply.header("allow"), "GET") << method;
  }
  EXPECT_EQ(testing::http(admin_port, "GET", good).status, 401);
  EXPECT_EQ(
      testing::http(admin_port, "GET", good, "", inspect_admin_bearer("not-the-token-0000")).status,
      401);
  // Only on the admin listener: the decision port has no such endpoint.
  EXPECT_EQ(
      testing::http(serve.port(), "GET", good, "", inspect_admin_bearer(kInspectAdminToken)).status,
      404);

  // The CLI: each error an operator can meet, said as what it is, exit 1 (2 for bad arguments,
  // the server's 400 among them).
  const std::string wrong_tokens = dir.path("wrong-tokens");
  const std::string wrong_token = "wrong-tok-0123456789";
  std::ofstream(wrong_tokens) << wrong_token << "\n";
  const std::string admin = "http://127.0.0.1:" + std::to_string(admin_port);
  const std::string unreachable = "http://127.0.0.1:" + std::to_string(testing::free_port());
  const std::string decision = "http://127.0.0.1:" + std::to_string(serve.port());
  for (const auto& [args, status, message] : std::vector<std::tuple<std::string, int, std::string>>{
           {"--admin " + unreachable + " --token-file " + dir.tokens() + " api_key=a", 1,
            ": Connection refused (is spillway serve running there with server.admin_listen?)"},
           {"--admin " + admin + " --token-file " + wrong_tokens + " api_key=a", 1,
            "refused the token of " + wrong_tokens + " (401)"},
           {"--admin " + decision + " --token-file " + dir.tokens() + " api_key=a ip=10.0.0.1", 1,
            "has no GET /v1/inspect (404): a server older than this spillway, or not its admin "
            "listener"},
           {"--admin " + admin + " --token-file " + dir.tokens() + " tier=gold", 2,
            "unknown attribute \"tier\": the policy uses api_key, ip"},
           {"--admin " + admin + " --token-file " + dir.tokens() + " ip=10.0.0.1", 2,
            "attribute \"api_key\" is required (layer gateway)"},
           {"--admin " + admin + " api_key=a", 2, "--admin needs --token-file FILE"},
           {"--token-file " + dir.tokens() + " api_key=a", 2, "--token-file goes with --admin URL"},
           {"--admin " + admin + " --token-file " + dir.tokens() + " --backend memory api_key=a", 2,
            "--config and --backend do not go with it"},
           {"--admin 127.0.0.1:1 --token-file " + dir.tokens() + " api_key=a", 2,
            "expected http://host:port"},
           {"--admin " + admin + " --token-file " + dir.tokens() + " api_key", 2,
            "expected NAME=VALUE, got \"api_key\""},
           {"--admin " + admin + " --token-file " + dir.tokens() + " api_key=a api_key=b", 2,
            "attribute \"api_key\" is given twice"},
       }) {
    const testing::BinaryRun run = testing::run_binary("inspect " + args);
    EXPECT_EQ(run.status, status) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
    EXPECT_NE(run.err.find("spillway inspect: "), std::string::npos) << args << ": " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << ": " << run.err;
    EXPECT_EQ(run.err.find(wrong_token), std::string::npos) << args << ": " << run.err;
    EXPECT_EQ(run.err.find(kInspectAdminToken), std::string::npos) << args << ": " << run.err;
  }
}

// On Redis the server names the same Redis keys as `spillway inspect` reading Redis itself, and
// reads the same state.
TEST(InspectAdminRedis, TheServerShowsWhatInspectReadsFromRedis) {
  testing::RedisServer redis;
  InspectAdminDir dir("redis", redis.url());
  testing::ServeProcess serve({"--config", dir.config()}, dir.path("serve.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t admin_port = serve.admin_port();
  ASSERT_NE(admin_port, 0) << serve.log();
  ASSERT_EQ(inspect_admin_check(serve.port()), 4) << serve.log();
  ASSERT_EQ(inspect_admin_check(serve.port()), 3) << serve.log();
  const std::string attributes =
      " --json api_key=" + std::string(kInspectAdminKey) + " ip=10.1.2.3";
  const testing::BinaryRun here =
      testing::run_binary("inspect --config " + dir.config() + attributes);
  ASSERT_EQ(here.status, 0) << here.err;
  const testing::BinaryRun served =
      testing::run_binary("inspect --admin http://127.0.0.1:" + std::to_string(admin_port) +
                          " --token-file " + dir.tokens() + attributes);
  ASSERT_EQ(served.status, 0) << served.err;
  json::object local = json::parse(here.out).as_object();
  json::object remote = json::parse(served.out).as_object();
  EXPECT_EQ(remote.at("backend"), local.at("backend"));
  EXPECT_EQ(remote.at("key_names").as_string(), "sha256");
  EXPECT_EQ(remote.at("key_names"), local.at("key_names"));
  // Tenant records are read here as the server reads them, so the plans agree too.
  EXPECT_FALSE(remote.at("plans_from_config").as_bool());
  ASSERT_EQ(remote.at("layers").as_array().size(), 2u) << served.out;
  for (json::object* object : {&local, &remote}) {
    for (json::value& layer : object->at("layers").as_array()) {
      // Time passes between the two reads: only the idle time may differ.
      layer.as_object().at("now").as_object().erase("reset_after_us");
    }
  }
  EXPECT_EQ(json::serialize(remote.at("layers")), json::serialize(local.at("layers")));
  EXPECT_EQ(remote.at("layers").at(0).at("now").at("remaining").as_int64(), 3) << served.out;
  EXPECT_TRUE(remote.at("layers").at(0).at("redis_key").as_string().starts_with("spillway:{"))
      << served.out;
}

TEST(InspectionJson, IsReadBackAsItWasWritten) {
  server::Inspection written{
      .backend = "redis://127.0.0.1:6379", .key_names = "sha256", .plans_from_config = false};
  written.layers.push_back(
      {.name = "gateway",
       .plan = "pro",
       .limit = "gcra 100/1m burst 100",
       .blocked = true,
       .key = "gateway:2:k\"1",
       .redis_key = "spillway:{abc}",
       .now = Decision{.allowed = true, .limit = 100, .remaining = 42, .reset_after = 34'800'000}});
  written.layers.push_back({.name = "trial",
                            .shadow = true,
                            .limit = "fixed_window 5/1s",
                            .key = "trial:1:x",
                            .error = "no reply in time"});
  const std::string text = server::inspection_json(written);
  EXPECT_EQ(text,
            R"({"backend":"redis://127.0.0.1:6379","key_names":"sha256","plans_from_config":false,)"
            R"("layers":[{"name":"gateway","shadow":false,"plan":"pro","limit":"gcra 100/1m burst )"
            R"(100","blocked":true,"key":"gateway:2:k\"1","redis_key":"spillway:{abc}","now":)"
            R"({"remaining":42,"limit":100,"reset_after_us":34800000}},{"name":"trial","shadow":)"
            R"(true,"plan":null,"limit":"fixed_window 5/1s","blocked":false,"key":"trial:1:x",)"
            R"("now":null,"error":"no reply in time"}]})");
  const Result<server::Inspection> read = server::parse_inspection(text);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(server::inspection_json(*read), text);
  ASSERT_EQ(read->layers.size(), 2u);
  EXPECT_EQ(read->layers[0].now->remaining, 42);
  EXPECT_EQ(read->layers[0].now->reset_after, 34'800'000);
  EXPECT_FALSE(read->layers[1].now.has_value());

  for (const std::string bad :
       {"", "[]", R"({"backend":1})", R"({"backend":"m","plans_from_config":false,"layers":[{}]})",
        R"({"backend":"m","plans_from_config":false,"layers":[{"name":"a",)"
        R"("shadow":false,"limit":"x","blocked":false,"key":"k","now":3}]})"}) {
    EXPECT_FALSE(server::parse_inspection(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace spillway
