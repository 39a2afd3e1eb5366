// POST /v1/check with a layer that takes its cost from an attribute (`cost: tokens`): the value
// may be a JSON number or a string; a bad one is a 400 naming it and changes nothing.
#include <gtest/gtest.h>

#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "tests/support/http_client.h"
#include "tests/support/llm_policy.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

policy::Config llm_config() {
  policy::Config config = policy::default_config();
  config.policy.layers = testing::llm_layers(100, 10'000);
  return config;
}

TEST(LayerCostHttp, TokensAsANumberOrAStringChargeTheTokenLayer) {
  testing::RunningService s = testing::start_service(llm_config(), std::make_unique<MemoryStore>());
  HttpReply first = http(s.port(), "POST", "/v1/check", R"({"api_key":"k1","tokens":4000})");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_NE(first.body.find(R"("remaining":6000,"retry_after_ms":0,"reset_after_ms")"),
            std::string::npos)
      << first.body;
  EXPECT_NE(first.body.find(R"("remaining":99,)"), std::string::npos) << first.body;
  HttpReply second = http(s.port(), "POST", "/v1/check", R"({"api_key":"k1","tokens":"4000"})");
  ASSERT_EQ(second.status, 200) << second.body;
  HttpReply third = http(s.port(), "POST", "/v1/check", R"({"api_key":"k1","tokens":4000})");
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_NE(third.body.find(R"("denied_by":"tpm")"), std::string::npos) << third.body;
  // Denied: the request layer was not charged for it (98 left after two requests).
  EXPECT_NE(third.body.find(R"("remaining":98,)"), std::string::npos) << third.body;
  HttpReply fits = http(s.port(), "POST", "/v1/check", R"({"api_key":"k1","tokens":2000})");
  EXPECT_EQ(fits.status, 200) << fits.body;
}

TEST(LayerCostHttp, BadTokenCountsAre400NamingTheAttributeAndChangeNothing) {
  testing::RunningService s = testing::start_service(llm_config(), std::make_unique<MemoryStore>());
  for (const char* body : {R"({"api_key":"k1","tokens":-5})", R"({"api_key":"k1","tokens":1.5})",
                           R"({"api_key":"k1","tokens":"many"})",
                           R"({"api_key":"k1","tokens":[1]})", R"({"api_key":"k1","tokens":true})",
                           R"({"api_key":"k1"})", R"({"api_key":"k1","tokens":1e300})"}) {
    HttpReply reply = http(s.port(), "POST", "/v1/check", body);
    EXPECT_EQ(reply.status, 400) << body << " -> " << reply.body;
    EXPECT_NE(reply.body.find("tokens"), std::string::npos) << body << " -> " << reply.body;
  }
  HttpReply ok = http(s.port(), "POST", "/v1/check", R"({"api_key":"k1","tokens":1})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_NE(ok.body.find(R"("remaining":99,)"), std::string::npos) << "a bad request charged";
  EXPECT_NE(ok.body.find(R"("remaining":9999,)"), std::string::npos) << ok.body;
}

}  // namespace
}  // namespace spillway::server
