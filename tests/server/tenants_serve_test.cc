// Tenant records served by real processes (spillway/tenant_directory.h,
// src/server/admin_service.h): `spillway serve` with the admin API on a listener of its own; on the
// memory backend with a journal, every acknowledged change survives kill -9 and a restart; the
// admin API refuses missing and wrong tokens and bad records with a 401 / 400 and writes nothing;
// two instances on one real redis-server (and on a real Redis Cluster) enforce a change made
// through the other within a second; the `spillway tenants` CLI; and no API key in clear in Redis,
// in what MONITOR saw or in the log after tenant writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"
#include "tests/support/text_lines.h"

namespace spillway {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock;
using Headers = std::map<std::string, std::string>;

constexpr std::string_view kTokenName = "ops";
constexpr std::string_view kToken = "tok-3f9a1c7e5b2d4860";

// A directory of one test's files (the config, the token file, logs, the journal), removed with
// everything in it at the end of the test.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : dir_("/tmp/spillway_tenants_serve_" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(tokens()) << "# the tests' admin\n" << kTokenName << " " << kToken << "\n";
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string tokens() const { return path("tokens"); }

 private:
  std::string dir_;
};

// serve's config: the decision and admin listeners on ports the kernel picks, and one by_plan
// layer that reads tenant records first: free 3/min by default, pro 100/min. The access log off
// unless `access_log` is empty (server.access_log's default: on).
std::string write_config(const Scratch& dir, const std::string& name, const std::string& url,
                         const std::string& tenants_file = "",
                         const std::string& access_log = "false") {
  const std::string path = dir.path(name + ".yaml");
  std::ofstream out(path);
  out << "server:\n"
         "  listen: 127.0.0.1:0\n"
         "  admin_listen: 127.0.0.1:0\n"
         "  admin_token_file: "
      << dir.tokens() << "\n";
  if (!access_log.empty()) out << "  access_log: " << access_log << "\n";
  out << "backend:\n"
         "  url: \""
      << url << "\"\n";
  if (!tenants_file.empty()) out << "  tenants_file: " << tenants_file << "\n";
  out << "layers:\n"
         "  - name: gateway\n"
         "    key: [api_key]\n"
         "    by_plan:\n"
         "      source: store\n"
         "      plans: {free: 3/min, pro: 100/min}\n"
         "      default: free\n";
  return path;
}

json::object tenants_object_of(const std::string& text) {
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec || !value.is_object()) {
    ADD_FAILURE() << "not a JSON object: " << text;
    return {};
  }
  return value.as_object();
}

// The string at `name`, or "" (absent, null or not a string).
std::string string_at(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : "";
}

std::int64_t int_at(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || !value->is_number()) {
    ADD_FAILURE() << "no number \"" << name << "\" in " << json::serialize(object);
    return INT64_MIN;
  }
  return value->to_number<std::int64_t>();
}

std::string error_of(const testing::HttpReply& reply) {
  return string_at(tenants_object_of(reply.body), "error");
}

// The record of a GET answer ({"id":…,"record":{…}}), compared with `expected` (JSON text).
bool record_is(const testing::HttpReply& reply, const std::string& expected) {
  if (reply.status != 200) return false;
  const json::object answer = tenants_object_of(reply.body);
  const json::value* record = answer.if_contains("record");
  return record != nullptr && *record == json::parse(expected);
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

using testing::lines_of;

std::size_t count_in_log(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

// One /v1/check answer, by what the gateway layer says.
struct ServedDecision {
  int status = 0;
  bool allowed = false;
  std::string denied_by;  // "" when null
  std::int64_t retry_after_ms = 0;
  std::string plan;  // the gateway layer's
  std::int64_t limit = 0;
  std::int64_t remaining = 0;
  std::string body;

  // What enforcement means, for comparisons: everything but the clock's reset_after_ms.
  std::string summary() const {
    std::ostringstream out;
    out << (allowed ? "allowed" : "denied by " + denied_by) << " retry_after_ms=" << retry_after_ms
        << " plan=" << plan << " limit=" << limit << " remaining=" << remaining;
    return out.str();
  }
};

ServedDecision decide(std::uint16_t port, const std::string& key) {
  ServedDecision decision;
  const testing::HttpReply reply =
      testing::http(port, "POST", "/v1/check", json::serialize(json::object{{"api_key", key}}));
  decision.status = reply.status;
  decision.body = reply.body;
  const json::object answer = tenants_object_of(reply.body);
  const json::value* allowed = answer.if_contains("allowed");
  if (allowed == nullptr || !allowed->is_bool()) {
    ADD_FAILURE() << "no \"allowed\" in the answer for " << key << ": " << reply.body;
    return decision;
  }
  decision.allowed = allowed->as_bool();
  decision.denied_by = string_at(answer, "denied_by");
  decision.retry_after_ms = int_at(answer, "retry_after_ms");
  const json::value* layers = answer.if_contains("layers");
  if (layers == nullptr || !layers->is_array() || layers->as_array().size() != 1 ||
      !layers->as_array()[0].is_object()) {
    ADD_FAILURE() << "not one layer in the answer for " << key << ": " << reply.body;
    return decision;
  }
  const json::object& gateway = layers->as_array()[0].as_object();
  EXPECT_EQ(string_at(gateway, "name"), "gateway") << reply.body;
  decision.plan = string_at(gateway, "plan");
  decision.limit = int_at(gateway, "limit");
  decision.remaining = int_at(gateway, "remaining");
  return decision;
}

// A `spillway serve` with its decision port and its admin port.
class TenantsInstance {
 public:
  TenantsInstance(const std::string& config, const std::string& log)
      : serve_({"--config", config}, log) {}

  // Both listeners up; the admin port read from its "admin API listening on" line.
  bool ready() {
    if (!serve_.ready()) return false;
    admin_port_ = serve_.admin_port();
    return admin_port_ != 0;
  }
  std::uint16_t port() const { return serve_.port(); }
  std::uint16_t admin_port() const { return admin_port_; }
  std::string admin_url() const { return "http://127.0.0.1:" + std::to_string(admin_port_); }
  std::string log() const { return serve_.log(); }
  // SIGKILL: no draining, no flushing; returns -1 (killed by a signal).
  int kill9() { return serve_.stop(SIGKILL); }

  // A request to the admin API with the right bearer token (and `headers`).
  testing::HttpReply admin(const std::string& method, const std::string& target,
                           const std::string& body = "", Headers headers = {}) const {
    headers.emplace("Authorization", "Bearer " + std::string(kToken));
    return testing::http(admin_port_, method, target, body, headers);
  }
  testing::HttpReply put(const std::string& key, const std::string& body) const {
    return admin("PUT", "/v1/tenants/" + key, body);
  }
  testing::HttpReply get(const std::string& key) const {
    return admin("GET", "/v1/tenants/" + key);
  }
  testing::HttpReply erase(const std::string& key) const {
    return admin("DELETE", "/v1/tenants/" + key);
  }
  std::int64_t total() const {
    const testing::HttpReply reply = admin("GET", "/v1/tenants?limit=1000");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return int_at(tenants_object_of(reply.body), "total");
  }
  ServedDecision decide(const std::string& key) const { return spillway::decide(port(), key); }

 private:
  testing::ServeProcess serve_;
  std::uint16_t admin_port_ = 0;
};

// An API key no other test or process uses.
std::string fresh_tenant_key() {
  std::random_device random;
  std::ostringstream out;
  out << "sk-live-" << std::hex << random() << random() << random();
  return out.str();
}

// ---------------------------------------------------------------------------------------------

TEST(TenantsServe, MemoryChangesSurviveKillNineAndRestart) {
  Scratch dir("kill9");
  const std::string journal = dir.path("tenants.journal");
  const std::string config = write_config(dir, "memory", "memory", journal);

  // Each key's record after the writes below (nullopt: none), and the first decision for it.
  std::map<std::string, std::optional<std::string>> records = {
      {"k-pro", R"({"plan":"pro","limits":{},"blocked":false})"},
      {"k-custom", R"({"plan":null,"limits":{"gateway":"2/1m"},"blocked":false})"},
      {"k-blocked", R"({"plan":null,"limits":{},"blocked":true})"},
      {"k-deleted", std::nullopt},
      {"k-replaced", R"({"plan":null,"limits":{"gateway":"5/1m"},"blocked":false})"},
      {"k-imported", R"({"plan":"pro","limits":{},"blocked":false})"},
      {"k-last", R"({"plan":"pro","limits":{},"blocked":false})"},
  };
  std::map<std::string, std::string> first_decisions = {
      {"k-pro", "allowed retry_after_ms=0 plan=pro limit=100 remaining=99"},
      {"k-custom", "allowed retry_after_ms=0 plan=custom limit=2 remaining=1"},
      {"k-blocked", "denied by gateway retry_after_ms=-1 plan=free limit=3 remaining=0"},
      {"k-deleted", "allowed retry_after_ms=0 plan=free limit=3 remaining=2"},
      {"k-replaced", "allowed retry_after_ms=0 plan=custom limit=5 remaining=4"},
      {"k-imported", "allowed retry_after_ms=0 plan=pro limit=100 remaining=99"},
      {"k-last", "allowed retry_after_ms=0 plan=pro limit=100 remaining=99"},
  };
  std::map<std::string, std::string> ids;  // from the PUT answers

  // After a restart (fresh counters): the records, their ids and the decisions.
  const auto expect_restored = [&](const TenantsInstance& server, const std::string& when) {
    for (const auto& [key, record] : records) {
      const testing::HttpReply reply = server.get(key);
      if (!record) {
        EXPECT_EQ(reply.status, 404) << when << ": " << key << ": " << reply.body;
        continue;
      }
      EXPECT_TRUE(record_is(reply, *record)) << when << ": " << key << ": " << reply.status << " "
                                             << reply.body << ", expected " << *record;
      if (ids.contains(key)) {
        EXPECT_EQ(string_at(tenants_object_of(reply.body), "id"), ids[key]) << when << ": " << key;
      }
    }
    for (const auto& [key, expected] : first_decisions) {
      const ServedDecision decision = server.decide(key);
      EXPECT_EQ(decision.summary(), expected) << when << ": " << key << ": " << decision.body;
    }
    std::int64_t present = 0;
    for (const auto& [key, record] : records) present += record.has_value();
    EXPECT_EQ(server.total(), present) << when;
  };

  {
    TenantsInstance first(config, dir.path("first.log"));
    ASSERT_TRUE(first.ready()) << first.log();
    EXPECT_NE(first.log().find("(0 tenant records)"), std::string::npos) << first.log();
    // Each write, and the record it replaced ("null": none).
    const std::vector<std::tuple<std::string, std::string, std::string>> writes = {
        {"k-pro", R"({"plan":"pro"})", "null"},
        {"k-custom", R"({"limits":{"gateway":"2/min"}})", "null"},
        {"k-blocked", R"({"blocked":true})", "null"},
        {"k-deleted", R"({"plan":"pro"})", "null"},
        {"k-replaced", R"({"plan":"pro"})", "null"},
        {"k-replaced", R"({"limits":{"gateway":"5/min"}})",
         R"({"plan":"pro","limits":{},"blocked":false})"},
    };
    for (const auto& [key, body, before] : writes) {
      const testing::HttpReply reply = first.put(key, body);
      ASSERT_EQ(reply.status, 200) << key << " " << body << ": " << reply.body;
      const json::object answer = tenants_object_of(reply.body);
      ids[key] = string_at(answer, "id");
      EXPECT_EQ(ids[key].size(), 22u) << reply.body;
      EXPECT_EQ(json::serialize(answer.at("before")), before) << key << ": " << reply.body;
      const testing::HttpReply got = first.get(key);
      EXPECT_EQ(json::serialize(answer.at("after")),
                json::serialize(tenants_object_of(got.body).at("record")))
          << key << ": " << got.body;
    }
    const testing::HttpReply deleted = first.erase("k-deleted");
    ASSERT_EQ(deleted.status, 200) << deleted.body;
    EXPECT_EQ(
        json::parse(deleted.body),
        json::parse(R"({"deleted":true,"before":{"plan":"pro","limits":{},"blocked":false}})"))
        << deleted.body;
    const testing::HttpReply imported = first.admin("POST", "/v1/tenants/import",
                                                    R"({"key":"k-imported","plan":"pro"})"
                                                    "\n");
    ASSERT_EQ(imported.status, 200) << imported.body;
    EXPECT_EQ(imported.body, R"({"imported":1})");
    // The same decisions in this process as after each restart: the records are what decides.
    for (const auto& [key, expected] : first_decisions) {
      if (key == "k-last") continue;
      const ServedDecision decision = first.decide(key);
      EXPECT_EQ(decision.summary(), expected)
          << "before the kill: " << key << ": " << decision.body;
    }
    // The last change, and kill -9 the moment its 200 is in: acknowledged means on disk.
    const testing::HttpReply last = first.put("k-last", R"({"plan":"pro"})");
    EXPECT_EQ(first.kill9(), -1);
    ASSERT_EQ(last.status, 200) << last.body;
    ids["k-last"] = string_at(tenants_object_of(last.body), "id");
  }

  {
    TenantsInstance second(config, dir.path("second.log"));
    ASSERT_TRUE(second.ready()) << second.log();
    EXPECT_NE(second.log().find("(6 tenant records)"), std::string::npos) << second.log();
    expect_restored(second, "after the first kill -9");
    // The custom limit is enforced, not only shown: 2 a minute, the third denied.
    EXPECT_TRUE(second.decide("k-custom").allowed);
    const ServedDecision third = second.decide("k-custom");
    EXPECT_FALSE(third.allowed) << third.body;
    EXPECT_EQ(third.denied_by, "gateway") << third.body;
    EXPECT_GT(third.retry_after_ms, 0) << third.body;
    // Changes after the journal was rewritten at open, then kill -9 again.
    const testing::HttpReply deleted = second.erase("k-pro");
    ASSERT_EQ(deleted.status, 200) << deleted.body;
    const testing::HttpReply after = second.put("k-after", R"({"plan":"pro","blocked":true})");
    EXPECT_EQ(second.kill9(), -1);
    ASSERT_EQ(after.status, 200) << after.body;
  }
  records["k-pro"] = std::nullopt;
  first_decisions["k-pro"] = "allowed retry_after_ms=0 plan=free limit=3 remaining=2";
  records["k-after"] = R"({"plan":"pro","limits":{},"blocked":true})";
  // Blocked wins over the plan: denied, and the plan the record names is the one shown.
  first_decisions["k-after"] = "denied by gateway retry_after_ms=-1 plan=pro limit=100 remaining=0";
  // A write that kill -9 cut short leaves a last line without its line break (the journal's
  // format: src/memory/tenant_file.h); it was never acknowledged, so it must not apply.
  std::ofstream(journal, std::ios::app) << "P " << ids["k-custom"] << " v1 1 pro";

  TenantsInstance third(config, dir.path("third.log"));
  ASSERT_TRUE(third.ready()) << third.log();
  EXPECT_NE(third.log().find("(6 tenant records)"), std::string::npos) << third.log();
  expect_restored(third, "after the second kill -9");
}

TEST(TenantsServe, AdminRefusesMissingAndWrongTokensAndChangesNothing) {
  Scratch dir("refuses");
  const std::string config = write_config(dir, "memory", "memory");
  TenantsInstance server(config, dir.path("serve.log"));
  ASSERT_TRUE(server.ready()) << server.log();

  const std::string token(kToken);
  const std::string missing = "the admin API needs Authorization: Bearer <token>";
  const std::string wrong = "the bearer token is not one of server.admin_token_file";
  struct Attempt {
    std::string what;
    Headers headers;
    std::string error;
  };
  const std::vector<Attempt> attempts = {
      {"no Authorization header", {}, missing},
      {"a wrong bearer token", {{"Authorization", "Bearer tok-0000000000000000"}}, wrong},
      {"the token cut short",
       {{"Authorization", "Bearer " + token.substr(0, token.size() - 1)}},
       wrong},
      {"the token and one byte more", {{"Authorization", "Bearer " + token + "x"}}, wrong},
      {"the token without Bearer", {{"Authorization", token}}, wrong},
      // base64("ops:tok-3f9a1c7e5b2d4860")
      {"Basic credentials", {{"Authorization", "Basic b3BzOnRvay0zZjlhMWM3ZTViMmQ0ODYw"}}, wrong},
      {"the token as Basic", {{"Authorization", "Basic " + token}}, wrong},
  };
  struct Request {
    std::string method, target, body;
  };
  const std::vector<Request> requests = {
      {"GET", "/v1/tenants", ""},
      {"PUT", "/v1/tenants/victim", R"({"plan":"pro"})"},
      {"POST", "/v1/tenants/import", R"({"key":"victim","plan":"pro"})"},
      {"DELETE", "/v1/tenants/victim", ""},
      {"GET", "/v1/tenants/victim", ""},
  };
  const SteadyTime::time_point burst = SteadyTime::now();
  for (const Attempt& attempt : attempts) {
    for (const Request& request : requests) {
      const testing::HttpReply reply = testing::http(server.admin_port(), request.method,
                                                     request.target, request.body, attempt.headers);
      EXPECT_EQ(reply.status, 401)
          << attempt.what << ": " << request.method << " " << request.target << ": " << reply.body;
      EXPECT_EQ(reply.header("www-authenticate"), R"(Bearer realm="spillway-admin")")
          << attempt.what;
      EXPECT_EQ(error_of(reply), attempt.error) << attempt.what << ": " << reply.body;
    }
  }
  const auto burst_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(SteadyTime::now() - burst);

  // Logged, at most a line a second: the first refusal, then one for the rest.
  const std::string first_line =
      R"(spillway admin: refused GET "/v1/tenants" from 127.0.0.1: no Authorization: Bearer )"
      "token\n";
  EXPECT_NE(server.log().find(first_line), std::string::npos) << server.log();
  EXPECT_LE(count_in_log(server.log(), "spillway admin: refused"),
            1u + static_cast<std::size_t>(burst_seconds.count()))
      << server.log();
  const std::string wrong_line =
      R"(spillway admin: refused GET "/v1/tenants" from 127.0.0.1: wrong token)";
  EXPECT_TRUE(testing::wait_until(
      [&] {
        testing::http(server.admin_port(), "GET", "/v1/tenants", "",
                      {{"Authorization", "Bearer tok-1111111111111111"}});
        return server.log().find(wrong_line) != std::string::npos;
      },
      3s))
      << server.log();
  const std::string log = server.log();
  EXPECT_NE(log.find(" more since the last line)"), std::string::npos) << log;
  // No token, right or wrong, is ever logged; nothing was audited.
  for (const std::string& secret :
       {token, std::string("tok-0000000000000000"), std::string("tok-1111111111111111"),
        std::string("b3BzOnRvay0zZjlhMWM3ZTViMmQ0ODYw")}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << secret << " is in the log:\n" << log;
  }
  EXPECT_EQ(log.find("spillway audit:"), std::string::npos) << log;

  // Nothing was written: no record, the default plan.
  EXPECT_EQ(server.get("victim").status, 404);
  EXPECT_EQ(server.total(), 0);
  EXPECT_EQ(server.decide("victim").plan, "free");

  // The decision port does not serve the admin API, even with the right token; nor does the
  // admin port serve decisions.
  const Headers bearer = {{"Authorization", "Bearer " + token}};
  for (const Request& request : std::vector<Request>{
           {"PUT", "/v1/tenants/x", R"({"plan":"pro"})"},
           {"GET", "/v1/tenants/x", ""},
           {"DELETE", "/v1/tenants/x", ""},
           {"GET", "/v1/tenants", ""},
           {"POST", "/v1/tenants/import", R"({"key":"x","plan":"pro"})"},
       }) {
    const testing::HttpReply reply =
        testing::http(server.port(), request.method, request.target, request.body, bearer);
    EXPECT_EQ(reply.status, 404) << "decision port: " << request.method << " " << request.target
                                 << ": " << reply.body;
  }
  EXPECT_EQ(server.get("x").status, 404);
  EXPECT_EQ(server.total(), 0);
  EXPECT_EQ(server.decide("x").plan, "free");
  const testing::HttpReply check_on_admin = server.admin("POST", "/v1/check", R"({"api_key":"x"})");
  EXPECT_EQ(check_on_admin.status, 404) << check_on_admin.body;
  EXPECT_EQ(server.log().find("spillway audit:"), std::string::npos) << server.log();
}

// A request without a valid token is answered 401 as soon as its headers are in: its (large)
// body is never waited for nor buffered. A valid token with a body over 64 KiB on a record path
// is a 413 before the body too; the import takes large bodies.
TEST(TenantsServe, AdminRefusesBeforeReadingTheBody) {
  Scratch dir("before_body");
  TenantsInstance server(write_config(dir, "a", "memory"), dir.path("a.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  const auto headers_only = [&](const std::string& target, const std::string& authorization) {
    testing::HttpConnection connection(server.admin_port());
    std::string head = "PUT " + target + " HTTP/1.1\r\nHost: test\r\nContent-Length: 200000000\r\n";
    if (!authorization.empty()) head += "Authorization: " + authorization + "\r\n";
    connection.send_raw(head + "\r\n{\"plan\":");  // the rest of the body never comes
    return connection.read_reply();
  };
  const auto started = SteadyTime::now();
  const testing::HttpReply none = headers_only("/v1/tenants/k", "");
  EXPECT_EQ(none.status, 401) << none.body;
  const testing::HttpReply wrong = headers_only("/v1/tenants/k", "Bearer not-the-token-at-all");
  EXPECT_EQ(wrong.status, 401) << wrong.body;
  const testing::HttpReply big = headers_only("/v1/tenants/k", "Bearer " + std::string(kToken));
  EXPECT_EQ(big.status, 413) << big.body;
  EXPECT_NE(error_of(big).find("/v1/tenants/import"), std::string::npos) << big.body;
  // Answered at once, not after the 120 s read timeout of a body that never comes.
  EXPECT_LT(SteadyTime::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(server.total(), 0);
}

TEST(TenantsServe, BadRecordsAre400sNamingTheFieldAndChangeNothing) {
  Scratch dir("bad_records");
  const std::string config = write_config(dir, "memory", "memory");
  TenantsInstance server(config, dir.path("serve.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string good = R"({"plan":"pro","limits":{},"blocked":false})";
  ASSERT_EQ(server.put("k-good", R"({"plan":"pro"})").status, 200);

  struct Bad {
    std::string body;
    std::string error;  // a part of the answer's "error"
  };
  const std::vector<Bad> bad = {
      {R"({"plan":"gold"})", R"(plan "gold" is not a plan (free, pro))"},
      {R"({"plan":"pro","colour":"red"})", R"(unknown field "colour")"},
      {R"({"plan":"pro","limits":{"gateway":"fast"}})", "limits.gateway"},
      {R"({"limits":{"gateway":"0/min"}})", "limits.gateway"},
      {R"({"limits":{"gateway":100}})", "limits.gateway"},
      {R"({"limits":{"edge":"1/min"}})", "limits.edge"},
      {R"({"limits":"1/min"})", R"("limits" must be an object)"},
      {R"({"blocked":"yes"})", R"("blocked" must be true or false)"},
      {R"({"plan":5})", R"("plan" must be a string)"},
      {"{}", "needs a plan, limits or blocked"},
      {R"({"plan":)", "not valid JSON"},
      {"", "not valid JSON"},
      {R"(["pro"])", "must be a JSON object"},
  };
  for (const Bad& request : bad) {
    for (const std::string key : {"k-good", "k-new"}) {
      const testing::HttpReply reply = server.put(key, request.body);
      EXPECT_EQ(reply.status, 400) << key << " " << request.body << ": " << reply.body;
      EXPECT_NE(error_of(reply).find(request.error), std::string::npos)
          << key << " " << request.body << ": " << reply.body;
    }
  }
  EXPECT_TRUE(record_is(server.get("k-good"), good)) << server.get("k-good").body;
  EXPECT_EQ(server.get("k-new").status, 404);
  EXPECT_EQ(server.decide("k-new").plan, "free");
  EXPECT_EQ(server.decide("k-good").plan, "pro");

  // Keys: 256 bytes is the bound.
  const std::string at_bound(256, 'a');
  EXPECT_EQ(server.put(at_bound, R"({"plan":"pro"})").status, 200);
  EXPECT_TRUE(record_is(server.get(at_bound), good));
  EXPECT_EQ(server.decide(at_bound).plan, "pro");
  const testing::HttpReply over = server.put(at_bound + "a", R"({"plan":"pro"})");
  EXPECT_EQ(over.status, 400) << over.body;
  EXPECT_NE(error_of(over).find("257 bytes"), std::string::npos) << over.body;
  EXPECT_EQ(server.get(at_bound + "a").status, 400);
  EXPECT_EQ(server.decide(at_bound + "a").plan, "free");
  const testing::HttpReply escape = server.put("bad%zz", R"({"plan":"pro"})");
  EXPECT_EQ(escape.status, 400) << escape.body;
  EXPECT_NE(error_of(escape).find("%-escape"), std::string::npos) << escape.body;
  EXPECT_EQ(server.total(), 2);

  // An import with one bad line writes nothing, and says which line.
  const Headers csv = {{"Content-Type", "text/csv"}};
  const Headers ndjson = {{"Content-Type", "application/x-ndjson"}};
  const std::vector<std::tuple<std::string, Headers, std::string>> bad_imports = {
      {"{\"key\":\"imp-1\",\"plan\":\"pro\"}\n{\"key\":\"imp-2\",\"plan\":\"gold\"}\n"
       "{\"key\":\"imp-3\",\"plan\":\"free\"}\n",
       ndjson, R"(line 2: plan "gold" is not a plan (free, pro))"},
      {"{\"key\":\"imp-1\",\"plan\":\"pro\"}\n\n{\"key\":\"imp-3\",\"plam\":\"free\"}\n", ndjson,
       R"(line 3: unknown field "plam")"},
      {"{\"key\":\"imp-1\",\"plan\":\"pro\"}\nnot json\n", ndjson, "line 2: not a JSON object"},
      {"{\"plan\":\"pro\"}\n", ndjson, R"(line 1: "key" must be a string)"},
      {"{\"key\":\"imp-1\",\"limits\":{\"gateway\":\"x\"}}\n", ndjson,
       R"(line 1: "limits.gateway")"},
      {"key,plan\nimp-1,pro\nimp-2\nimp-3,free\n", csv, "line 3: a CSV line is key,plan"},
      {"key,plan\nimp-1,pro\nimp-2,gold\n", csv, R"(line 3: plan "gold" is not a plan)"},
      {"imp-1,pro\n" + std::string(300, 'k') + ",pro\n", csv, "line 2: the key must be"},
  };
  for (const auto& [body, headers, error] : bad_imports) {
    const testing::HttpReply reply = server.admin("POST", "/v1/tenants/import", body, headers);
    EXPECT_EQ(reply.status, 400) << body << ": " << reply.body;
    EXPECT_TRUE(error_of(reply).starts_with(error.substr(0, error.find(':') + 1)) &&
                error_of(reply).find(error) != std::string::npos)
        << body << ": " << reply.body << ", expected " << error;
  }
  EXPECT_EQ(server.total(), 2);
  for (const std::string key : {"imp-1", "imp-2", "imp-3"}) {
    EXPECT_EQ(server.get(key).status, 404) << key;
    EXPECT_EQ(server.decide(key).plan, "free") << key;
  }
  // Only the two accepted writes were audited.
  EXPECT_EQ(count_in_log(server.log(), "spillway audit:"), 2u) << server.log();

  // The same imports without their bad line go in: the 400s were about that line.
  const testing::HttpReply fine =
      server.admin("POST", "/v1/tenants/import", "key,plan\nimp-1,pro\nimp-3,free\n", csv);
  EXPECT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(fine.body, R"({"imported":2})");
  EXPECT_EQ(server.total(), 4);
  EXPECT_EQ(server.decide("imp-1").plan, "pro");
}

// Two instances on one backend: a change through either's admin API is enforced by the other
// within a second (each polls the change log every 100 ms). `redis_cli` runs a redis-cli command
// where the {tenants} keys live. Returns the delays measured, for the record.
std::vector<std::pair<std::string, SteadyTime::duration>> expect_instances_follow_each_other(
    const Scratch& dir, const std::string& url,
    const std::function<std::string(const std::string&)>& redis_cli) {
  std::vector<std::pair<std::string, SteadyTime::duration>> delays;
  const std::string config = write_config(dir, "shared", url);
  TenantsInstance a(config, dir.path("a.log"));
  TenantsInstance b(config, dir.path("b.log"));
  if (!a.ready() || !b.ready()) {
    ADD_FAILURE() << "A:\n" << a.log() << "\nB:\n" << b.log();
    return delays;
  }
  EXPECT_NE(a.log().find("(0 tenant records)"), std::string::npos) << a.log();

  // A plan set through A: B's decisions follow.
  const std::string plan_key = "cross-plan-key";
  EXPECT_EQ(b.decide(plan_key).summary(), "allowed retry_after_ms=0 plan=free limit=3 remaining=2");
  const testing::HttpReply put = a.put(plan_key, R"({"plan":"pro"})");
  const SteadyTime::time_point put_done = SteadyTime::now();
  EXPECT_EQ(put.status, 200) << put.body;
  ServedDecision seen;
  EXPECT_TRUE(testing::wait_until(
      [&] {
        seen = b.decide(plan_key);
        return seen.plan == "pro";
      },
      5s))
      << "B still says " << seen.body;
  delays.emplace_back("plan set through A, enforced by B", SteadyTime::now() - put_done);
  EXPECT_EQ(seen.limit, 100) << seen.body;
  EXPECT_TRUE(seen.allowed) << seen.body;
  EXPECT_EQ(a.decide(plan_key).plan, "pro");  // A's own copy: at once
  const std::string id = string_at(tenants_object_of(put.body), "id");
  EXPECT_EQ(id.size(), 22u) << put.body;
  const testing::HttpReply on_b = b.get(plan_key);
  EXPECT_TRUE(record_is(on_b, R"({"plan":"pro","limits":{},"blocked":false})")) << on_b.body;
  EXPECT_EQ(string_at(tenants_object_of(on_b.body), "id"), id);
  EXPECT_EQ(trimmed(redis_cli("HGET 'spillway:{tenants}:records' " + id)), "v1 0 pro");

  // Blocked through B: A denies, charging nothing. A's admin GET reads the copy its decisions
  // read, without charging, so the wait for the change costs no request.
  const std::string block_key = "cross-block-key";
  EXPECT_EQ(a.decide(block_key).summary(),
            "allowed retry_after_ms=0 plan=free limit=3 remaining=2");
  const testing::HttpReply block = b.put(block_key, R"({"blocked":true})");
  const SteadyTime::time_point block_done = SteadyTime::now();
  EXPECT_EQ(block.status, 200) << block.body;
  EXPECT_TRUE(testing::wait_until([&] { return a.get(block_key).status == 200; }, 5s));
  delays.emplace_back("blocked through B, seen by A", SteadyTime::now() - block_done);
  for (int i = 0; i < 4; ++i) {
    const ServedDecision denied = a.decide(block_key);
    EXPECT_FALSE(denied.allowed) << denied.body;
    EXPECT_EQ(denied.denied_by, "gateway") << denied.body;
    EXPECT_EQ(denied.retry_after_ms, -1) << denied.body;
  }
  const testing::HttpReply unblock = b.erase(block_key);
  const SteadyTime::time_point unblock_done = SteadyTime::now();
  EXPECT_EQ(unblock.status, 200) << unblock.body;
  EXPECT_TRUE(testing::wait_until([&] { return a.get(block_key).status == 404; }, 5s));
  delays.emplace_back("unblocked through B, seen by A", SteadyTime::now() - unblock_done);
  // One request charged before the block, none while blocked: this one leaves 1 of 3.
  EXPECT_EQ(a.decide(block_key).summary(),
            "allowed retry_after_ms=0 plan=free limit=3 remaining=1");

  // Deleted through A: B is back on the default plan.
  const testing::HttpReply deleted = a.erase(plan_key);
  const SteadyTime::time_point delete_done = SteadyTime::now();
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_TRUE(testing::wait_until(
      [&] {
        seen = b.decide(plan_key);
        return seen.plan == "free";
      },
      5s))
      << "B still says " << seen.body;
  delays.emplace_back("deleted through A, default on B", SteadyTime::now() - delete_done);
  EXPECT_EQ(seen.limit, 3) << seen.body;
  EXPECT_EQ(b.get(plan_key).status, 404);
  EXPECT_EQ(trimmed(redis_cli("HLEN 'spillway:{tenants}:records'")), "0");
  // Four writes: four changes in sequence, four log entries.
  EXPECT_EQ(trimmed(redis_cli("GET 'spillway:{tenants}:seq'")), "4");
  EXPECT_EQ(trimmed(redis_cli("XLEN 'spillway:{tenants}:log'")), "4");

  for (const auto& [what, delay] : delays) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(delay);
    std::cout << "[ delay    ] " << what << ": " << ms.count() << " ms" << std::endl;
    EXPECT_LT(delay, 1s) << what;
  }
  // Each audited its own writes only.
  EXPECT_EQ(count_in_log(a.log(), "spillway audit: token=ops"), 2u) << a.log();
  EXPECT_EQ(count_in_log(b.log(), "spillway audit: token=ops"), 2u) << b.log();
  return delays;
}

TEST(TenantsServe, PlanChangeThroughOneInstanceIsEnforcedByTheOtherWithinOneSecond) {
  Scratch dir("redis");
  testing::RedisServer redis;
  expect_instances_follow_each_other(
      dir, redis.url(), [&](const std::string& command) { return redis.cli(command); });
}

TEST(TenantsServeCluster, PlanChangeAppliesAcrossInstancesOnACluster) {
  Scratch dir("cluster");
  testing::RedisCluster& cluster = testing::shared_cluster();
  const std::string slot =
      trimmed(cluster.nodes().front()->cli("CLUSTER KEYSLOT 'spillway:{tenants}:records'"));
  ASSERT_FALSE(slot.empty());
  expect_instances_follow_each_other(dir, cluster.url(), [&](const std::string& command) {
    testing::RedisServer* owner = cluster.owner_of(static_cast<std::uint16_t>(std::stoi(slot)));
    return owner == nullptr ? std::string("no owner of slot " + slot) : owner->cli(command);
  });
}

TEST(TenantsServe, CliSetGetListDeleteImport) {
  Scratch dir("cli");
  const std::string config = write_config(dir, "memory", "memory");
  TenantsInstance server(config, dir.path("serve.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string admin = " --admin " + server.admin_url() + " --token-file " + dir.tokens();
  const auto tenants = [&](const std::string& args, const std::string& input = "") {
    return testing::run_binary("tenants " + args + admin, input);
  };
  // A success: exit 0, nothing on stderr, the server's JSON on stdout.
  const auto ok = [&](const std::string& args, const std::string& input = "") {
    const testing::BinaryRun run = tenants(args, input);
    EXPECT_EQ(run.status, 0) << args << ": " << run.err;
    EXPECT_EQ(run.err, "") << args;
    EXPECT_EQ(lines_of(run.out).size(), 1u) << args << ": " << run.out;
    return tenants_object_of(run.out);
  };
  // A server's refusal: exit 1, its status and message on stderr, nothing on stdout.
  const auto refused = [&](const std::string& args, const std::string& message) {
    const testing::BinaryRun run = tenants(args);
    EXPECT_EQ(run.status, 1) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
    EXPECT_NE(run.err.find("spillway tenants: " + message), std::string::npos)
        << args << ": " << run.err;
  };

  json::object set = ok("set cli-pro --plan pro");
  EXPECT_EQ(json::serialize(set.at("after")), R"({"plan":"pro","limits":{},"blocked":false})");
  EXPECT_TRUE(set.at("before").is_null());
  const std::string pro_id = string_at(set, "id");
  set = ok("set cli-custom --limit gateway=1/min");
  EXPECT_EQ(json::serialize(set.at("after")),
            R"({"plan":null,"limits":{"gateway":"1/1m"},"blocked":false})");
  set = ok("set cli-blocked --blocked");
  EXPECT_EQ(json::serialize(set.at("after")), R"({"plan":null,"limits":{},"blocked":true})");
  // A key with '/' and a space goes as one path segment.
  set = ok("set 'cli/odd key' --plan pro");
  const std::string odd_id = string_at(set, "id");
  // set again: the record before is in the answer.
  set = ok("set cli-custom --limit gateway=2/min --plan free");
  EXPECT_EQ(json::serialize(set.at("before")),
            R"({"plan":null,"limits":{"gateway":"1/1m"},"blocked":false})");

  json::object got = ok("get cli-pro");
  EXPECT_EQ(string_at(got, "id"), pro_id);
  EXPECT_EQ(json::serialize(got.at("record")), R"({"plan":"pro","limits":{},"blocked":false})");
  got = ok("get 'cli/odd key'");
  EXPECT_EQ(string_at(got, "id"), odd_id);

  // What the CLI set is what the decision port enforces.
  EXPECT_EQ(server.decide("cli-pro").summary(),
            "allowed retry_after_ms=0 plan=pro limit=100 remaining=99");
  EXPECT_EQ(server.decide("cli/odd key").plan, "pro");
  EXPECT_EQ(server.decide("cli-custom").summary(),
            "allowed retry_after_ms=0 plan=custom limit=2 remaining=1");
  const ServedDecision blocked = server.decide("cli-blocked");
  EXPECT_FALSE(blocked.allowed);
  EXPECT_EQ(blocked.retry_after_ms, -1);

  // Imports: CSV (by the file's name) and NDJSON, from files and from stdin.
  const std::string csv = dir.path("tenants.csv");
  std::ofstream(csv) << "key,plan\ncsv-1,pro\ncsv-2,free\n";
  EXPECT_EQ(json::serialize(ok("import " + csv)), R"({"imported":2})");
  const std::string ndjson = dir.path("tenants.ndjson");
  std::ofstream(ndjson) << "{\"key\":\"nd-1\",\"plan\":\"pro\"}\n"
                           "{\"key\":\"nd-2\",\"limits\":{\"gateway\":\"7/min\"}}\n";
  EXPECT_EQ(json::serialize(ok("import " + ndjson)), R"({"imported":2})");
  EXPECT_EQ(json::serialize(ok("import -", "{\"key\":\"stdin-1\",\"blocked\":true}\n")),
            R"({"imported":1})");
  EXPECT_EQ(server.decide("csv-1").plan, "pro");
  EXPECT_EQ(server.decide("csv-2").plan, "free");
  EXPECT_EQ(server.decide("nd-1").plan, "pro");
  EXPECT_EQ(server.decide("nd-2").summary(),
            "allowed retry_after_ms=0 plan=custom limit=7 remaining=6");
  EXPECT_EQ(server.decide("stdin-1").retry_after_ms, -1);

  // list: one page, by plan; every page with --all, one answer per line.
  EXPECT_EQ(server.total(), 9);
  const json::object pros = ok("list --plan pro");
  EXPECT_TRUE(pros.at("next_cursor").is_null()) << json::serialize(pros);
  std::set<std::string> pro_ids;
  for (const json::value& entry : pros.at("tenants").as_array()) {
    pro_ids.insert(string_at(entry.as_object(), "id"));
    EXPECT_EQ(string_at(entry.as_object().at("record").as_object(), "plan"), "pro");
  }
  EXPECT_EQ(pro_ids.size(), 4u) << json::serialize(pros);  // cli-pro, odd, csv-1, nd-1
  EXPECT_TRUE(pro_ids.contains(pro_id) && pro_ids.contains(odd_id)) << json::serialize(pros);
  const testing::BinaryRun all = tenants("list --all --page 2");
  EXPECT_EQ(all.status, 0) << all.err;
  std::set<std::string> listed;
  const std::vector<std::string> pages = lines_of(all.out);
  EXPECT_EQ(pages.size(), 5u) << all.out;  // 9 records, 2 a page
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const json::object page = tenants_object_of(pages[i]);
    EXPECT_EQ(page.at("next_cursor").is_null(), i + 1 == pages.size()) << pages[i];
    EXPECT_EQ(int_at(page, "total"), 9) << pages[i];
    for (const json::value& entry : page.at("tenants").as_array()) {
      EXPECT_TRUE(listed.insert(string_at(entry.as_object(), "id")).second) << all.out;
    }
  }
  EXPECT_EQ(listed.size(), 9u) << all.out;

  // delete, twice.
  json::object deleted = ok("delete cli-blocked");
  EXPECT_EQ(json::serialize(deleted),
            R"({"deleted":true,"before":{"plan":null,"limits":{},"blocked":true}})");
  EXPECT_TRUE(server.decide("cli-blocked").allowed);
  refused("delete cli-blocked", "404: no tenant record for this key: nothing deleted");
  refused("get cli-blocked", "404: no tenant record for this key");

  // The server's refusals: exit 1 and its message.
  refused("set cli-pro --plan gold", R"(400: plan "gold" is not a plan (free, pro))");
  refused("set cli-pro --limit gateway=fast", "400: \"limits.gateway\"");
  refused("set cli-pro --limit edge=1/min", "400: \"limits.edge\"");
  const std::string bad_import = dir.path("bad.ndjson");
  std::ofstream(bad_import) << "{\"key\":\"bad-1\",\"plan\":\"pro\"}\n"
                               "{\"key\":\"bad-2\",\"plam\":\"pro\"}\n";
  refused("import " + bad_import, R"(400: line 2: unknown field "plam")");
  const std::string bad_csv = dir.path("bad.csv");
  std::ofstream(bad_csv) << "bad-1,pro\nbad-2,gold\n";
  refused("import " + bad_csv, R"(400: line 2: plan "gold" is not a plan)");
  refused("import " + dir.path("missing.ndjson"), dir.path("missing.ndjson") + " cannot be read");
  EXPECT_EQ(server.get("bad-1").status, 404);

  // Exit 1 too: a token the server does not know, a server that is not there.
  const std::string wrong_tokens = dir.path("wrong-tokens");
  std::ofstream(wrong_tokens) << "tok-9999999999999999\n";
  const testing::BinaryRun wrong = testing::run_binary(
      "tenants get cli-pro --admin " + server.admin_url() + " --token-file " + wrong_tokens);
  EXPECT_EQ(wrong.status, 1) << wrong.err;
  EXPECT_NE(wrong.err.find(
                "spillway tenants: 401: the bearer token is not one of server.admin_token_file"),
            std::string::npos)
      << wrong.err;
  const std::string nobody = "http://127.0.0.1:" + std::to_string(testing::free_port());
  const testing::BinaryRun away = testing::run_binary("tenants get cli-pro --admin " + nobody +
                                                      " --token-file " + dir.tokens());
  EXPECT_EQ(away.status, 1) << away.err;
  EXPECT_NE(away.err.find("spillway tenants: admin API at 127.0.0.1:"), std::string::npos)
      << away.err;
  EXPECT_EQ(std::count(away.err.begin(), away.err.end(), '\n'), 1) << away.err;

  // Bad arguments: exit 2, the reason, and nothing sent.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"tenants" + admin, "which command?"},
           {"tenants frobnicate k1" + admin, "unknown command \"frobnicate\""},
           {"tenants set --plan pro" + admin, "set takes one argument"},
           {"tenants get a b" + admin, "get takes one argument"},
           {"tenants list extra" + admin, "list takes no argument"},
           {"tenants set k1" + admin, "set needs --plan, --limit or --blocked"},
           {"tenants set k1 --limit bogus" + admin, "--limit takes LAYER=RATE"},
           {"tenants get k1", "--admin and --token-file are required"},
           {"tenants get k1 --admin " + server.admin_url(),
            "--admin and --token-file are required"},
           {"tenants get k1 --admin ftp://x --token-file " + dir.tokens(),
            "expected http://host:port"},
           {"tenants get k1 --admin " + server.admin_url() + " --token-file " +
                dir.path("no-tokens"),
            "cannot be read"},
           {"tenants list --page 0" + admin, "page"},
       }) {
    const testing::BinaryRun run = testing::run_binary(args);
    EXPECT_EQ(run.status, 2) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
    EXPECT_NE(run.err.find(message), std::string::npos) << args << ": " << run.err;
    EXPECT_TRUE(run.err.starts_with("spillway tenants: ")) << args << ": " << run.err;
  }
  EXPECT_EQ(server.get("k1").status, 404);
  EXPECT_EQ(server.total(), 8);
  // Every change audited once, under the token's name: 5 sets, 3 imports, 1 delete.
  EXPECT_EQ(count_in_log(server.log(), "spillway audit: token=ops "), 9u) << server.log();
}

// DELETE /v1/tenants/{key}/counters/{layer}: a caller whose limit was hit by mistake gets its
// whole budget back at once (every plan's key of the layer, and its own rate's), nothing else is
// touched, and the change is audited.
void expect_reset_gives_the_budget_back(const std::string& url, const std::string& name) {
  Scratch dir(name);
  TenantsInstance server(write_config(dir, "a", url), dir.path("a.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string key = fresh_tenant_key(), other = fresh_tenant_key();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(server.decide(key).allowed);
    EXPECT_TRUE(server.decide(other).allowed);
  }
  EXPECT_FALSE(server.decide(key).allowed);
  // A custom rate used up too: its key is reset with the plans'.
  const std::string contract = fresh_tenant_key();
  ASSERT_EQ(server.put(contract, R"({"limits":{"gateway":"1/min"}})").status, 200);
  EXPECT_TRUE(server.decide(contract).allowed);
  EXPECT_FALSE(server.decide(contract).allowed);

  const testing::HttpReply reset =
      server.admin("DELETE", "/v1/tenants/" + key + "/counters/gateway");
  ASSERT_EQ(reset.status, 200) << reset.body;
  const json::object answer = tenants_object_of(reset.body);
  EXPECT_EQ(string_at(answer, "layer"), "gateway");
  EXPECT_EQ(int_at(answer, "keys"), 2);        // free and pro
  EXPECT_EQ(int_at(answer, "held_state"), 1);  // only free had been used
  const ServedDecision after = server.decide(key);
  EXPECT_TRUE(after.allowed) << after.body;
  EXPECT_EQ(after.remaining, 2) << after.body;  // the whole budget back
  EXPECT_FALSE(server.decide(other).allowed);   // another caller untouched

  const testing::HttpReply custom =
      server.admin("DELETE", "/v1/tenants/" + contract + "/counters/gateway");
  ASSERT_EQ(custom.status, 200) << custom.body;
  EXPECT_EQ(int_at(tenants_object_of(custom.body), "keys"), 3);  // free, pro and its own 1/min
  EXPECT_TRUE(server.decide(contract).allowed);

  // Errors name what is wrong and reset nothing.
  const testing::HttpReply unknown =
      server.admin("DELETE", "/v1/tenants/" + key + "/counters/edge");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(error_of(unknown).find("no layer is named \"edge\" (gateway)"), std::string::npos)
      << unknown.body;
  EXPECT_EQ(server.admin("PUT", "/v1/tenants/" + key + "/counters/gateway").status, 405);
  EXPECT_EQ(server.admin("DELETE", "/v1/tenants/" + key + "/other/gateway").status, 404);
  EXPECT_EQ(testing::http(server.admin_port(), "DELETE", "/v1/tenants/" + key + "/counters/gateway")
                .status,
            401);
  EXPECT_EQ(server.decide(key).remaining, 1);  // 3 after the reset, then two checks
  EXPECT_NE(server.log().find(" reset tenant="), std::string::npos) << server.log();
  EXPECT_EQ(server.log().find(key), std::string::npos) << server.log();
}

TEST(TenantsServe, MemoryResetGivesACallersBudgetBack) {
  expect_reset_gives_the_budget_back("memory", "reset_memory");
}

TEST(TenantsServe, RedisResetGivesACallersBudgetBack) {
  testing::RedisServer redis;
  expect_reset_gives_the_budget_back(redis.url(), "reset_redis");
}

TEST(TenantsServe, NoApiKeyInClearInRedisAfterTenantWrites) {
  Scratch dir("secrecy");
  testing::RedisServer redis;
  const std::string api_key = fresh_tenant_key();
  const std::string imported_key = fresh_tenant_key();
  // MONITOR: every command Redis receives, with its arguments.
  testing::ChildProcess monitor(
      {"/usr/bin/redis-cli", "-p", std::to_string(redis.port()), "monitor"},
      dir.path("monitor.log"));
  ASSERT_TRUE(testing::wait_until([&] { return monitor.log().find("OK") != std::string::npos; }))
      << monitor.log();
  // The default config but for the tenant layer and the admin API: key_hash sha256, the access
  // log on.
  const std::string config = write_config(dir, "redis", redis.url(), "", "");
  TenantsInstance server(config, dir.path("serve.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  // An operator's request with a stale token: refused, and logged.
  const testing::HttpReply stale =
      testing::http(server.admin_port(), "GET", "/v1/tenants/" + api_key, "",
                    {{"Authorization", "Bearer tok-0000000000000000"}});
  EXPECT_EQ(stale.status, 401) << stale.body;

  std::vector<std::string> answers;  // the admin API's, searched too
  const auto admin = [&](const testing::HttpReply& reply) {
    EXPECT_EQ(reply.status, 200) << reply.body;
    answers.push_back(reply.body);
    return reply;
  };
  const std::string id =
      string_at(tenants_object_of(admin(server.put(api_key, R"({"plan":"pro"})")).body), "id");
  EXPECT_EQ(server.decide(api_key).plan, "pro");
  EXPECT_EQ(server.decide(api_key).plan, "pro");
  admin(server.put(api_key, R"({"limits":{"gateway":"7/min"}})"));
  EXPECT_EQ(server.decide(api_key).summary(),
            "allowed retry_after_ms=0 plan=custom limit=7 remaining=6");
  admin(server.put(api_key, R"({"plan":"pro","blocked":true})"));
  EXPECT_EQ(server.decide(api_key).retry_after_ms, -1);
  admin(server.get(api_key));
  admin(server.admin("POST", "/v1/tenants/import",
                     R"({"key":")" + imported_key + R"(","plan":"pro"})" + "\n"));
  EXPECT_EQ(server.decide(imported_key).plan, "pro");
  admin(server.admin("GET", "/v1/tenants"));
  EXPECT_EQ(server.total(), 2);

  // Everything Redis holds: each key's name and contents.
  const std::vector<std::string> keys = lines_of(redis.cli("--scan"));
  std::string contents;
  std::set<std::string> types;
  for (const std::string& key : keys) {
    const std::string quoted = "'" + key + "'";
    const std::string type = trimmed(redis.cli("TYPE " + quoted));
    if (type == "none") continue;  // a counter that expired since the scan: its name was read
    types.insert(type);
    std::string value;
    if (type == "hash") {
      value = redis.cli("HGETALL " + quoted);
    } else if (type == "stream") {
      value = redis.cli("XRANGE " + quoted + " - +");
    } else if (type == "string") {
      value = redis.cli("GET " + quoted);
    } else if (type == "zset") {
      value = redis.cli("ZRANGE " + quoted + " 0 -1 WITHSCORES");
    } else if (type == "list") {
      value = redis.cli("LRANGE " + quoted + " 0 -1");
    } else if (type == "set") {
      value = redis.cli("SMEMBERS " + quoted);
    } else {
      ADD_FAILURE() << key << " has type " << type << ", not read";
    }
    contents += key + " (" + type + "):\n" + value + "\n";
  }
  // What was read is what was written: the records under the keys' digests, the log naming them.
  for (const std::string name :
       {"spillway:{tenants}:records", "spillway:{tenants}:log", "spillway:{tenants}:seq"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), name), keys.end()) << contents;
  }
  EXPECT_EQ(trimmed(redis.cli("HGET 'spillway:{tenants}:records' " + id)), "v1 1 pro") << contents;
  EXPECT_EQ(trimmed(redis.cli("HLEN 'spillway:{tenants}:records'")), "2") << contents;
  EXPECT_NE(redis.cli("XRANGE 'spillway:{tenants}:log' - +").find(id), std::string::npos)
      << contents;
  EXPECT_TRUE(types.contains("stream") && types.contains("hash")) << contents;
  EXPECT_GE(keys.size(), 4u) << contents;  // the three above and the gateway's counters

  std::string all_answers;
  for (const std::string& answer : answers) all_answers += answer + "\n";
  const std::string outputs[][2] = {
      {"Redis key names", redis.cli("--scan")},
      {"Redis contents", contents},
      {"MONITOR", monitor.log()},
      {"the server's log", server.log()},
      {"the admin API's answers", all_answers},
  };
  EXPECT_NE(outputs[2][1].find("EVALSHA"), std::string::npos) << "MONITOR saw no script";
  EXPECT_NE(outputs[3][1].find("spillway audit: token=ops put tenant="), std::string::npos)
      << outputs[3][1];
  for (const auto& [where, text] : outputs) {
    for (const std::string& key : {api_key, imported_key}) {
      std::string lines;  // the lines that hold it
      for (const std::string& line : lines_of(text)) {
        if (line.find(key) != std::string::npos) lines += "  " + line + "\n";
      }
      EXPECT_EQ(lines, "") << "the API key " << key << " is in " << where << ", on these lines";
    }
    EXPECT_EQ(text.find("sk-live-"), std::string::npos) << "part of an API key is in " << where;
  }
}

}  // namespace
}  // namespace spillway
