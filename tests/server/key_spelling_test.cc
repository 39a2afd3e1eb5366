// One caller, one spelling, on every path (docs/SPEC.md §5.2, src/policy/caller_value.h): a tenant
// record, an import or a counter reset given one spelling of a caller reaches the requests that
// send another (an IP address in another text form, an IPv4-mapped IPv6 address, another address
// of one IPv6 /64, another spelling of a path), and a key no request could be keyed by is a 400
// naming the form expected (KeySpelling: `spillway serve` on the memory backend). And a counter
// reset made through one instance reaches another instance's remembered denials on one real
// redis-server (ResetReach).
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr std::string_view kSpellToken = "tok-spelling-5e1d7a9c20b4";

// A directory of one test's files, removed at the end.
class SpellScratch {
 public:
  explicit SpellScratch(const std::string& name)
      : dir_("/tmp/spillway_key_spelling_" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(path("tokens")) << "ops " << kSpellToken << "\n";
    // Owner-only, as an operator keeps it (serve and validate warn otherwise).
    std::filesystem::permissions(
        path("tokens"), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  ~SpellScratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  SpellScratch(const SpellScratch&) = delete;
  SpellScratch& operator=(const SpellScratch&) = delete;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // A config of `layers` (YAML under "layers:") on `url`; with the admin API when `admin`.
  std::string config(const std::string& name, const std::string& url, const std::string& layers,
                     bool admin = true, const std::string& backend_extra = "") const {
    const std::string file = path(name + ".yaml");
    std::ofstream out(file);
    out << "server:\n  listen: 127.0.0.1:0\n  access_log: false\n";
    if (admin) {
      out << "  admin_listen: 127.0.0.1:0\n  admin_token_file: " << path("tokens") << "\n";
    }
    out << "backend:\n  url: \"" << url << "\"\n" << backend_extra << "layers:\n" << layers;
    return file;
  }

 private:
  std::string dir_;
};

// A `spillway serve`, with its admin port when it has one.
class SpellServer {
 public:
  SpellServer(const std::string& config, const std::string& log, bool admin = true)
      : serve_({"--config", config}, log), admin_(admin) {}
  bool ready() {
    if (!serve_.ready()) return false;
    if (!admin_) return true;
    admin_port_ = serve_.admin_port();
    return admin_port_ != 0;
  }
  std::string log() const { return serve_.log(); }
  testing::HttpReply admin(const std::string& method, const std::string& target,
                           const std::string& body = "",
                           std::map<std::string, std::string> headers = {}) const {
    headers.emplace("Authorization", "Bearer " + std::string(kSpellToken));
    return testing::http(admin_port_, method, target, body, headers);
  }
  // POST /v1/check with these attributes: the answer's "allowed" (and the body, for messages).
  bool allowed(const json::object& attributes, std::string* body = nullptr) const {
    const testing::HttpReply reply =
        testing::http(serve_.port(), "POST", "/v1/check", json::serialize(attributes));
    if (body != nullptr) *body = reply.body;
    boost::system::error_code ec;
    const json::value answer = json::parse(reply.body, ec);
    if (ec || !answer.is_object() || !answer.as_object().contains("allowed")) {
      ADD_FAILURE() << "no decision: " << reply.status << " " << reply.body;
      return false;
    }
    return answer.as_object().at("allowed").as_bool();
  }

 private:
  testing::ServeProcess serve_;
  bool admin_;
  std::uint16_t admin_port_ = 0;
};

// A by_plan layer keyed by the client address that reads tenant records.
constexpr std::string_view kSpellIpPlans =
    "  - name: edge\n"
    "    key: [ip]\n"
    "    by_plan:\n"
    "      attribute: ip\n"
    "      source: store\n"
    "      plans: {free: 100/min, pro: 1000/min}\n"
    "      default: free\n";

json::object spell_ip(const std::string& ip) { return json::object{{"ip", ip}}; }

std::string spell_error(const testing::HttpReply& reply) {
  boost::system::error_code ec;
  const json::value value = json::parse(reply.body, ec);
  if (ec || !value.is_object() || !value.as_object().contains("error")) return reply.body;
  return std::string(value.as_object().at("error").as_string());
}

// "held_state" of a reset's answer (-1 when absent).
std::int64_t spell_held_state(const testing::HttpReply& reply) {
  boost::system::error_code ec;
  const json::value value = json::parse(reply.body, ec);
  if (ec || !value.is_object() || !value.as_object().contains("held_state")) return -1;
  return value.as_object().at("held_state").to_number<std::int64_t>();
}

TEST(KeySpelling, AnIpRecordAppliesToEverySpellingOfTheCaller) {
  SpellScratch dir("ip_record");
  SpellServer server(dir.config("a", "memory", std::string(kSpellIpPlans)), dir.path("a.log"));
  ASSERT_TRUE(server.ready()) << server.log();

  // IPv6: a record put by one address of a /64 blocks every address of it, in any text form.
  const testing::HttpReply put =
      server.admin("PUT", "/v1/tenants/2001:db8:1:2::1", R"({"blocked":true})");
  ASSERT_EQ(put.status, 200) << put.body;
  for (const std::string ip : {"2001:db8:1:2::1", "2001:DB8:1:2:0:0:0:1", "2001:db8:1:2:ffff::9"}) {
    std::string body;
    EXPECT_FALSE(server.allowed(spell_ip(ip), &body)) << ip << ": " << body;
  }
  EXPECT_TRUE(server.allowed(spell_ip("2001:db8:1:3::1")));  // another /64
  // The same record by the key's own form, and by another spelling.
  EXPECT_EQ(server.admin("GET", "/v1/tenants/2001:db8:1:2::%2F64").status, 200);
  EXPECT_EQ(server.admin("GET", "/v1/tenants/2001:0db8:0001:0002::abcd").status, 200);

  // IPv4-mapped IPv6 is the IPv4 address, both ways.
  ASSERT_EQ(server.admin("PUT", "/v1/tenants/::ffff:203.0.113.9", R"({"blocked":true})").status,
            200);
  EXPECT_FALSE(server.allowed(spell_ip("203.0.113.9")));
  EXPECT_FALSE(server.allowed(spell_ip("::ffff:203.0.113.9")));
  ASSERT_EQ(server.admin("DELETE", "/v1/tenants/203.0.113.9").status, 200);
  EXPECT_TRUE(server.allowed(spell_ip("::ffff:203.0.113.9")));

  // An import's keys are spelt the same way.
  const testing::HttpReply imported = server.admin(
      "POST", "/v1/tenants/import", "{\"key\":\"2001:db8:9:9::1\",\"blocked\":true}\n");
  ASSERT_EQ(imported.status, 200) << imported.body;
  EXPECT_FALSE(server.allowed(spell_ip("2001:db8:9:9:1:2:3:4")));

  // A key that no request could be keyed by: a 400 naming the form, nothing written.
  for (const std::string bad :
       {"sk-live-123", "203.0.113.300", "2001:db8::%2F48", "10.0.0.0%2F8"}) {
    const testing::HttpReply refused =
        server.admin("PUT", "/v1/tenants/" + bad, R"({"plan":"pro"})");
    EXPECT_EQ(refused.status, 400) << bad << ": " << refused.body;
    EXPECT_NE(spell_error(refused).find("expected an IPv4 or IPv6 address"), std::string::npos)
        << refused.body;
  }
  const testing::HttpReply bad_import = server.admin(
      "POST", "/v1/tenants/import",
      "{\"key\":\"192.0.2.1\",\"plan\":\"pro\"}\n{\"key\":\"nope\",\"plan\":\"pro\"}\n");
  EXPECT_EQ(bad_import.status, 400) << bad_import.body;
  EXPECT_NE(spell_error(bad_import).find("line 2: "), std::string::npos) << bad_import.body;
  EXPECT_EQ(server.admin("GET", "/v1/tenants/192.0.2.1").status, 404);  // all or nothing
}

TEST(KeySpelling, AResetByAnotherSpellingOfAnAddressGivesTheBudgetBack) {
  SpellScratch dir("ip_reset");
  SpellServer server(dir.config("a", "memory",
                                "  - name: edge\n"
                                "    key: [ip]\n"
                                "    limit: 2/hour\n"),
                     dir.path("a.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  // (sent as, reset as)
  for (const auto& [sent, reset] : {std::pair{"203.0.113.9", "::ffff:203.0.113.9"},
                                    std::pair{"::ffff:198.51.100.7", "198.51.100.7"},
                                    std::pair{"2001:db8:5:6::1", "2001:DB8:5:6:0:0:0:77"}}) {
    EXPECT_TRUE(server.allowed(spell_ip(sent)));
    EXPECT_TRUE(server.allowed(spell_ip(sent)));
    EXPECT_FALSE(server.allowed(spell_ip(sent))) << sent;
    const testing::HttpReply answer =
        server.admin("DELETE", "/v1/tenants/" + std::string(reset) + "/counters/edge");
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(spell_held_state(answer), 1) << reset << ": " << answer.body;
    EXPECT_TRUE(server.allowed(spell_ip(sent))) << sent << " after a reset as " << reset;
  }
  const testing::HttpReply refused = server.admin("DELETE", "/v1/tenants/localhost/counters/edge");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(spell_error(refused).find("expected an IPv4 or IPv6 address"), std::string::npos)
      << refused.body;
}

TEST(KeySpelling, AResetByAnotherSpellingOfAPathGivesTheBudgetBack) {
  SpellScratch dir("path_reset");
  SpellServer server(dir.config("a", "memory",
                                "  - name: paths\n"
                                "    key: [endpoint]\n"
                                "    limit: 2/hour\n"),
                     dir.path("a.log"));
  ASSERT_TRUE(server.ready()) << server.log();
  const json::object search{{"endpoint", "/search"}};
  EXPECT_TRUE(server.allowed(search));
  EXPECT_TRUE(server.allowed(json::object{{"endpoint", "/Search/?q=1"}}));
  EXPECT_FALSE(server.allowed(search));
  // "//SEARCH/./" is /search as the layer keys it; '/' in a key is sent as %2F.
  const testing::HttpReply answer =
      server.admin("DELETE", "/v1/tenants/%2F%2FSEARCH%2F.%2F/counters/paths");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(spell_held_state(answer), 1) << answer.body;
  EXPECT_TRUE(server.allowed(search));
  const testing::HttpReply refused = server.admin("DELETE", "/v1/tenants/search/counters/paths");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(spell_error(refused).find("is not a request path"), std::string::npos) << refused.body;
}

// Where a block applies is said: validate warns when Envoy's services are on with tenant records
// and no rls.tenant_key, is quiet with it, and refuses rls.tenant_key without a gRPC listener.
TEST(KeySpelling, ValidateSaysWhetherBlocksApplyToEnvoysPaths) {
  SpellScratch dir("validate");
  std::ofstream(dir.path("rules.yaml"))
      << "domain: d\ndescriptors:\n  - key: api_key\n    rate_limit: {unit: minute, "
         "requests_per_unit: 5}\n";
  const auto config_with = [&](const std::string& name, const std::string& server,
                               const std::string& rls) {
    const std::string file = dir.path(name + ".yaml");
    std::ofstream(file) << "server:\n  admin_listen: 127.0.0.1:0\n  admin_token_file: "
                        << dir.path("tokens") << "\n"
                        << server << "rls:\n  config: " << dir.path("rules.yaml") << "\n"
                        << rls << "layers:\n"
                        << kSpellIpPlans;
    return file;
  };
  const std::string grpc = "  grpc_listen: 127.0.0.1:0\n";
  const testing::BinaryRun warned = testing::run_binary("validate " + config_with("a", grpc, ""));
  EXPECT_EQ(warned.status, 0) << warned.err;
  EXPECT_NE(warned.err.find("warning: line 4: server.grpc_listen: tenant records apply to POST "
                            "/v1/check and GET /v1/auth only"),
            std::string::npos)
      << warned.err;
  const testing::BinaryRun quiet =
      testing::run_binary("validate " + config_with("b", grpc, "  tenant_key: api_key\n"));
  EXPECT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << quiet.err;
  const testing::BinaryRun refused =
      testing::run_binary("validate " + config_with("c", "", "  tenant_key: api_key\n"));
  EXPECT_EQ(refused.status, 1) << refused.err;
  EXPECT_NE(refused.err.find("rls.tenant_key: is for Envoy's services"), std::string::npos)
      << refused.err;
  const testing::BinaryRun help = testing::run_binary("help tenants");
  EXPECT_NE((help.out + help.err).find("rls.tenant_key names the descriptor key"),
            std::string::npos)
      << help.out << help.err;
}

// A counter reset through instance A reaches instance B, which remembers the caller's denial in
// its over-limit cache (B has no admin API and no tenant layer: it follows resets all the same).
TEST(ResetReach, AResetThroughOneInstanceEndsAnotherInstancesCachedDenial) {
  SpellScratch dir("reach");
  testing::RedisServer redis;
  const std::string layers =
      "  - name: gateway\n"
      "    key: [api_key]\n"
      "    limit: 2/hour\n";
  const std::string cache = "  over_limit_cache: 1000\n";
  SpellServer a(dir.config("a", redis.url(), layers, true, cache), dir.path("a.log"));
  SpellServer b(dir.config("b", redis.url(), layers, false, cache), dir.path("b.log"), false);
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  const json::object caller{{"api_key", "reach-caller-1"}};
  EXPECT_TRUE(a.allowed(caller));
  EXPECT_TRUE(b.allowed(caller));
  // Denied on both, then again from each one's cache (the denial lasts about an hour).
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(a.allowed(caller));
    EXPECT_FALSE(b.allowed(caller));
  }
  const testing::HttpReply reset = a.admin("DELETE", "/v1/tenants/reach-caller-1/counters/gateway");
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_NE(reset.body.find("\"announced\":true"), std::string::npos) << reset.body;
  // B admits again once the reset reached it; the deadline only turns a hang into a failure.
  EXPECT_TRUE(testing::wait_until([&] { return b.allowed(caller); }, 30s)) << b.log();
}

// The same for a layer decided from quota leases: B's lease remembers the shared store's denial,
// and forgets it when A's reset reaches it.
TEST(ResetReach, AResetThroughOneInstanceEndsAnotherInstancesLeaseDenial) {
  SpellScratch dir("reach_lease");
  testing::RedisServer redis;
  const std::string layers =
      "  - name: gateway\n"
      "    key: [api_key]\n"
      "    limit: 4/hour\n"
      "    sync: lease\n";
  SpellServer a(dir.config("a", redis.url(), layers, true), dir.path("a.log"));
  SpellServer b(dir.config("b", redis.url(), layers, false), dir.path("b.log"), false);
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  const json::object caller{{"api_key", "reach-lease-1"}};
  int admitted = 0;
  for (int i = 0; i < 20 && (a.allowed(caller) || b.allowed(caller)); ++i) ++admitted;
  EXPECT_LE(admitted, 4);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(b.allowed(caller));
  const testing::HttpReply reset = a.admin("DELETE", "/v1/tenants/reach-lease-1/counters/gateway");
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_TRUE(testing::wait_until([&] { return b.allowed(caller); }, 30s)) << b.log();
}

}  // namespace
}  // namespace spillway
