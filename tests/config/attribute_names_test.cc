// A layer's attribute names (key parts, by_plan.attribute, by_endpoint.attribute, cost) must be
// attributes a request can give: `cost: cost` and `cost: reserve` (POST /v1/check reads those
// members as the request's own cost and reservation), `cost: 5` (a number, not a name) and
// `cost: ip` (never a whole number) used to load and then answer every request 400. They are
// refused by parse_config (so by `spillway validate` and `spillway serve`, which the binary tests
// run), naming the line and the field, and by Policy::make for a spec built in code.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "tests/support/process.h"

namespace spillway::policy {
namespace {

// A config of one layer whose line 4 is `line4` (after name, key and limit).
std::string attribute_layer(const std::string& key, const std::string& extra) {
  return "layers:\n  - name: tokens\n    key: " + key + "\n    limit: 100/min\n" + extra;
}

TEST(AttributeNames, RequestFieldsNumbersAndNeverNumbersAreRefusedNamingLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {attribute_layer("[api_key]", "    cost: cost\n"),
       "line 5: layers[0].cost: cost attribute \"cost\" is a field of the request itself"},
      {attribute_layer("[api_key]", "    cost: reserve\n"),
       "line 5: layers[0].cost: cost attribute \"reserve\" is a field of the request itself"},
      {attribute_layer("[api_key]", "    cost: 5\n"),
       "line 5: layers[0].cost: cost attribute \"5\" is not an attribute name"},
      {attribute_layer("[api_key]", "    cost: ip\n"),
       "line 5: layers[0].cost: cost attribute \"ip\" is never a whole number"},
      {attribute_layer("[api_key]", "    cost: endpoint\n"),
       "line 5: layers[0].cost: cost attribute \"endpoint\" is never a whole number"},
      {attribute_layer("[cost]", ""),
       "line 3: layers[0].key[0]: attribute \"cost\" is a field of the request itself"},
      {attribute_layer("[ip, reserve]", ""),
       "line 3: layers[0].key[1]: attribute \"reserve\" is a field of the request itself"},
      {attribute_layer("[7]", ""),
       "line 3: layers[0].key[0]: attribute \"7\" is not an attribute name"},
      {"layers:\n  - name: plans\n    key: [api_key]\n    by_plan:\n      attribute: cost\n"
       "      plans: {free: 1/min}\n      default: free\n",
       "line 5: layers[0].by_plan.attribute: attribute \"cost\" is a field of the request"},
      {"layers:\n  - name: routes\n    key: [endpoint]\n    by_endpoint:\n      attribute: "
       "reserve\n      limits: {/a: 1/min}\n",
       "line 5: layers[0].by_endpoint.attribute: attribute \"reserve\" is a field of the request"},
  };
  for (const auto& [text, expected] : cases) {
    Result<Config> config = parse_config(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << text << " -> " << config.error().message;
  }
  // Names that a request can give still load.
  for (const std::string& good : {attribute_layer("[api_key]", "    cost: tokens\n"),
                                  attribute_layer("[_tenant, api_key]", "    cost: cost_units\n"),
                                  attribute_layer("[x-tenant]", "")}) {
    Result<Config> config = parse_config(good);
    EXPECT_TRUE(config.has_value()) << good << " -> " << config.error().message;
  }
}

TEST(AttributeNames, PolicyMakeRefusesThemInASpecBuiltInCode) {
  for (const auto& [key, cost] :
       std::vector<std::pair<std::string, std::string>>{{"api_key", "cost"},
                                                        {"api_key", "reserve"},
                                                        {"api_key", "5"},
                                                        {"cost", ""},
                                                        {"9lives", ""}}) {
    PolicySpec spec;
    spec.layers.push_back({.name = "l", .key = {key}, .cost = cost});
    spec.layers.back().limit = RateSpec{.limit = 10, .period = 60'000'000};
    auto made = Policy::make(spec);
    EXPECT_FALSE(made) << key << " / " << cost;
    if (!made) {
      EXPECT_NE(made.error().message.find("layer \"l\": "), std::string::npos)
          << made.error().message;
    }
  }
}

TEST(AttributeNamesBinary, ValidateAndServeRefuseACostAttributeNoRequestCanGive) {
  const std::string path = "/tmp/spillway_attribute_names_" + std::to_string(::getpid()) + ".yaml";
  for (const std::string cost : {"cost", "reserve", "5"}) {
    std::ofstream(path) << attribute_layer("[api_key]", "    cost: " + cost + "\n");
    for (const std::string& command :
         {"validate " + path, "serve --listen 127.0.0.1:0 --config " + path}) {
      const testing::BinaryRun run = testing::run_binary(command);
      EXPECT_EQ(run.status, 1) << command << ": " << run.err;
      EXPECT_NE(run.err.find(path + ": line 5: layers[0].cost: cost attribute \"" + cost + "\""),
                std::string::npos)
          << command << ": " << run.err;
    }
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace spillway::policy
