// JSON has one meaning (src/server/json_unique.h): a member given twice in one object is a 400
// naming it on every JSON input — the decision endpoints (/v1/check, /v1/limit), the settlement
// endpoints (/v1/commit, /v1/cancel), the admin API's records (PUT /v1/tenants/{key}) and its
// NDJSON import lines — and nothing is decided or written for such a body. Before, Boost.JSON's
// last member won, so {"api_key":"blk1","api_key":"someone-else"} was decided for the second
// (a first-wins front end would have seen the first) and {"costs":{"tpm":90,"tpm":2}} settled 2.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "src/memory/tenant_file.h"
#include "src/server/admin_service.h"
#include "src/server/json_unique.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"

namespace spillway {
namespace {

using server::parse_json_unique;

// The path of the member parse_json_unique names as given twice, or "" when it parses.
std::string dup_member_of(const std::string& text) {
  auto parsed = parse_json_unique(text);
  if (parsed) return "";
  EXPECT_FALSE(parsed.error().duplicate.empty()) << text << ": " << parsed.error().message();
  return parsed.error().duplicate;
}

TEST(JsonDuplicates, AMemberGivenTwiceIsNamedWithItsPath) {
  EXPECT_EQ(dup_member_of(R"({"a":1,"a":2})"), "a");
  EXPECT_EQ(dup_member_of(R"({"costs":{"tpm":90,"tpm":2}})"), "costs.tpm");
  // Names compare decoded: an escape is the same member.
  EXPECT_EQ(dup_member_of(R"({"api_key":"blk1","\u0061pi_key":"x"})"), "api_key");
  EXPECT_EQ(dup_member_of(R"({"x":[1,{"b":1,"b":2}]})"), "x[].b");
  EXPECT_EQ(dup_member_of(R"({"a":{"k":{"z":1}},"b":{"k":1,"k":1}})"), "b.k");
  // Past the names compared one by one, a large object is checked when it closes.
  std::string large = "{";
  for (int i = 0; i < 200; ++i)
    large += "\"m" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  EXPECT_EQ(dup_member_of(large + "\"m7\":0}"), "m7");
  // The message names it.
  auto parsed = parse_json_unique(R"({"costs":{"tpm":90,"tpm":2}})");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message().find("member \"costs.tpm\" is given twice"), std::string::npos)
      << parsed.error().message();
}

TEST(JsonDuplicates, OneNameInDifferentObjectsAndOrdinaryJsonStillParse) {
  for (const std::string text : {R"({"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]})",
                                 R"([{"a":1},{"a":1}])", R"("text")", R"( {"a" : [1, 2.5, null,
                                 true, "\u00e9"]} )"}) {
    auto parsed = parse_json_unique(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message();
    EXPECT_EQ(*parsed, boost::json::parse(text)) << text;
  }
  std::string large = "{";
  for (int i = 0; i < 200; ++i) large += (i ? ",\"m" : "\"m") + std::to_string(i) + "\":1";
  EXPECT_TRUE(parse_json_unique(large + "}"));
  // Syntax errors are still syntax errors, with where they are.
  auto bad = parse_json_unique(R"({"a":1,})");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().duplicate.empty());
  EXPECT_TRUE(bad.error().syntax);
  EXPECT_FALSE(parse_json_unique(R"({"a":1} x)"));
  EXPECT_FALSE(parse_json_unique(R"({"a":1)"));
}

// The error of a 400 answer.
std::string dup_error_of(const testing::HttpReply& reply) {
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(reply.body, ec);
  if (ec || !body.is_object() || !body.as_object().contains("error")) return reply.body;
  return std::string(body.as_object().at("error").as_string());
}

TEST(JsonDuplicates, DecisionAndSettlementBodiesWithADuplicateAre400sNamingIt) {
  testing::RunningService running =
      testing::start_service(policy::default_config(), std::make_unique<MemoryStore>());
  ASSERT_NE(running.port(), 0);
  const std::uint16_t port = running.port();
  struct Case {
    std::string path;
    std::string body;
    std::string member;
  };
  const std::vector<Case> cases = {
      {"/v1/check", R"({"ip":"203.0.113.9","api_key":"blk1","endpoint":"/search","api_key":"x"})",
       "api_key"},
      {"/v1/check", R"({"ip":"203.0.113.9","api_key":"k1","cost":1,"cost":0})", "cost"},
      {"/v1/check", R"({"ip":"203.0.113.9","ip":"198.51.100.1","api_key":"k1"})", "ip"},
      {"/v1/limit", R"({"key":"k","limit":5,"period":"1m","\u006cimit":500})", "limit"},
      {"/v1/commit", R"({"reservation":"r1","costs":{"tpm":90,"tpm":2}})", "costs.tpm"},
      {"/v1/cancel", R"({"reservation":"r1","reservation":"r2"})", "reservation"},
  };
  for (const Case& c : cases) {
    const testing::HttpReply reply = testing::http(port, "POST", c.path, c.body);
    EXPECT_EQ(reply.status, 400) << c.path << " " << c.body << ": " << reply.body;
    EXPECT_NE(dup_error_of(reply).find("member \"" + c.member + "\" is given twice"),
              std::string::npos)
        << c.path << ": " << reply.body;
  }
}

// ---- the admin API, in this process ---------------------------------------------------------

constexpr char kDupToken[] = "dup-token-0123456789abcdef";

std::shared_ptr<const policy::Policy> dup_tenant_policy() {
  policy::PolicySpec spec = policy::seed_policy_spec();
  spec.layers[1].by_plan->source = policy::PlanSource::kStore;
  return *policy::Policy::make(spec);
}

struct DupAdmin {
  std::shared_ptr<TenantDirectory> tenants =
      std::move(*FileTenantDirectory::open("", {.hash = KeyHash::kNone}));
  MemoryStore store;
  std::shared_ptr<const policy::Policy> policy = dup_tenant_policy();
  server::AdminService admin{
      tenants, store, {{"ops", kDupToken}}, [this] { return policy; }, [](const std::string&) {}};

  server::HttpResponse call(const std::string& method, const std::string& target,
                            const std::string& body, const std::string& type = "application/json") {
    server::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers.emplace_back("authorization", std::string("Bearer ") + kDupToken);
    request.headers.emplace_back("content-type", type);
    request.body = body;
    request.peer_address = "127.0.0.1";
    server::HttpResponse answer;
    answer.status = 0;
    admin.handle(std::move(request), [&](server::HttpResponse response) { answer = response; });
    return answer;
  }
};

TEST(JsonDuplicates, AdminRecordsAndImportLinesWithADuplicateAre400sAndWriteNothing) {
  DupAdmin admin;
  for (const auto& [body, member] : std::vector<std::pair<std::string, std::string>>{
           {R"({"plan":"pro","plan":"free"})", "plan"},
           {R"({"blocked":true,"blocked":false})", "blocked"},
           {R"({"limits":{"gateway":"1/min","gateway":"900/min"}})", "limits.gateway"},
       }) {
    const server::HttpResponse answer = admin.call("PUT", "/v1/tenants/blk1", body);
    EXPECT_EQ(answer.status, 400) << body << ": " << answer.body;
    EXPECT_NE(answer.body.find("member \\\"" + member + "\\\" is given twice"), std::string::npos)
        << answer.body;
  }
  EXPECT_EQ(admin.tenants->size(), 0u);
  // An import line with its key twice: which one would be the tenant? Neither; the whole import
  // is refused, naming the line.
  const server::HttpResponse import =
      admin.call("POST", "/v1/tenants/import",
                 "{\"key\":\"a\",\"plan\":\"pro\"}\n{\"key\":\"blk1\",\"plan\":\"free\","
                 "\"\\u006bey\":\"b\"}\n",
                 "application/x-ndjson");
  EXPECT_EQ(import.status, 400) << import.body;
  EXPECT_NE(import.body.find("line 2: member \\\"key\\\" is given twice"), std::string::npos)
      << import.body;
  EXPECT_EQ(admin.tenants->size(), 0u);
  // The same records without the duplicates are taken.
  EXPECT_EQ(admin.call("PUT", "/v1/tenants/blk1", R"({"plan":"pro","blocked":true})").status, 200);
  EXPECT_EQ(admin.tenants->size(), 1u);
}

}  // namespace
}  // namespace spillway
