// The admin API's CSV import follows RFC 4180 quoting (src/server/csv_fields.h): `"csv5",pro`
// imports the key csv5 (before, the key was "csv5" with its quotes, a tenant no caller is),
// a quoted field may hold commas and doubled quotes, and a quote anywhere else is a 400 naming
// the line, with nothing imported. And every key is reachable: the key `import` is the tenant at
// /v1/tenants/%69mport (the path as sent /v1/tenants/import is the import route).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/memory/tenant_file.h"
#include "src/server/admin_service.h"
#include "src/server/csv_fields.h"

namespace spillway {
namespace {

constexpr char kCsvToken[] = "csv-token-0123456789abcdef";

struct CsvAdmin {
  std::shared_ptr<TenantDirectory> tenants =
      std::move(*FileTenantDirectory::open("", {.hash = KeyHash::kNone}));
  MemoryStore store;
  std::shared_ptr<const policy::Policy> policy = [] {
    policy::PolicySpec spec = policy::seed_policy_spec();
    spec.layers[1].by_plan->source = policy::PlanSource::kStore;
    return *policy::Policy::make(spec);
  }();
  server::AdminService admin{
      tenants, store, {{"ops", kCsvToken}}, [this] { return policy; }, [](const std::string&) {}};

  server::HttpResponse call(const std::string& method, const std::string& target,
                            const std::string& body = "", const std::string& type = "text/csv") {
    server::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers.emplace_back("authorization", std::string("Bearer ") + kCsvToken);
    request.headers.emplace_back("content-type", type);
    request.body = body;
    request.peer_address = "127.0.0.1";
    server::HttpResponse answer;
    answer.status = 0;
    admin.handle(std::move(request), [&](server::HttpResponse response) { answer = response; });
    return answer;
  }
  // The plan of the key's record, "" without one.
  std::string plan_of(const std::string& key) const {
    const auto record = tenants->find(key);
    return record == nullptr ? "" : record->plan;
  }
};

TEST(CsvImport, QuotedFieldsFollowRfc4180) {
  CsvAdmin admin;
  const server::HttpResponse answer = admin.call(
      "POST", "/v1/tenants/import",
      "key,plan\r\n\"csv5\",pro\r\n\"a,b\",free\r\n\"say \"\"hi\"\"\",\"pro\"\r\nplain,free\r\n");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.body, R"({"imported":4})");
  EXPECT_EQ(admin.plan_of("csv5"), "pro");
  EXPECT_EQ(admin.plan_of("\"csv5\""), "") << "the quotes were kept in the key";
  EXPECT_EQ(admin.plan_of("a,b"), "free");
  EXPECT_EQ(admin.plan_of("say \"hi\""), "pro");
  EXPECT_EQ(admin.plan_of("plain"), "free");
  // A quoted header is a header too.
  EXPECT_EQ(admin.call("POST", "/v1/tenants/import", "\"key\",\"plan\"\nq,pro\n").body,
            R"({"imported":1})");
}

TEST(CsvImport, AStrayQuoteIsA400NamingTheLineAndImportsNothing) {
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {"ok,pro\n\"open,pro\n", "line 2: the quoted field that starts at byte 1 is not closed"},
           {"ok,pro\nok2,free\nab\"c,pro\n",
            "line 3: byte 3: a '\\\"' in a field that is not quoted"},
           {"\"x\"y,pro\n", "line 1: byte 4: after a quoted field comes ','"},
           {"ok,pro\n\"a\",\"b\",pro\n", "line 2: a CSV line is key,plan (this one has 3 fields)"},
           {"nocomma\n", "line 1: a CSV line is key,plan (this one has 1 field)"},
       }) {
    CsvAdmin admin;
    const server::HttpResponse answer = admin.call("POST", "/v1/tenants/import", body);
    EXPECT_EQ(answer.status, 400) << body << ": " << answer.body;
    EXPECT_NE(answer.body.find(message), std::string::npos) << body << ": " << answer.body;
    EXPECT_EQ(admin.tenants->size(), 0u) << body;
  }
}

TEST(CsvImport, FieldsSplitAsTheRfcSays) {
  using Fields = std::vector<std::string>;
  EXPECT_EQ(*server::csv_fields("a,b"), (Fields{"a", "b"}));
  EXPECT_EQ(*server::csv_fields(""), (Fields{""}));
  EXPECT_EQ(*server::csv_fields(","), (Fields{"", ""}));
  EXPECT_EQ(*server::csv_fields("\"\",x"), (Fields{"", "x"}));
  EXPECT_EQ(*server::csv_fields("\"a\"\"\",\"b,c\""), (Fields{"a\"", "b,c"}));
  EXPECT_FALSE(server::csv_fields("\""));
  EXPECT_FALSE(server::csv_fields("\"a\"\""));
  EXPECT_FALSE(server::csv_fields("a\""));
}

TEST(TenantKeyImport, TheKeyImportIsReachableEncodedAndThePlainPathStaysTheImport) {
  CsvAdmin admin;
  const server::HttpResponse put =
      admin.call("PUT", "/v1/tenants/%69mport", R"({"plan":"pro"})", "application/json");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(admin.plan_of("import"), "pro");
  EXPECT_EQ(admin.call("GET", "/v1/tenants/%69mport").status, 200);
  const server::HttpResponse plain = admin.call("GET", "/v1/tenants/import");
  EXPECT_EQ(plain.status, 405) << plain.body;
  EXPECT_NE(plain.body.find("/v1/tenants/%69mport"), std::string::npos) << plain.body;
  EXPECT_EQ(admin.call("DELETE", "/v1/tenants/%69mport").status, 200);
  EXPECT_EQ(admin.tenants->size(), 0u);
}

}  // namespace
}  // namespace spillway
