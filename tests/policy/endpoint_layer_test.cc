// Endpoint layers as configured and built (docs/SPEC.md §5.1): route errors name their line, the
// key holds the route as written, other layers key a path by its canonical form, and the policy
// lists the attributes it reads.
#include <gtest/gtest.h>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"

namespace spillway::policy {
namespace {

std::string config_error(const std::string& yaml) {
  auto config = parse_config(yaml);
  return config ? "" : config.error().message;
}

TEST(EndpointLayerConfig, RouteErrorsNameTheLineAndTheRoute) {
  const std::string head =
      "layers:\n"
      "  - name: endpoint\n"
      "    key: [api_key, endpoint]\n"
      "    by_endpoint:\n"
      "      limits:\n"
      "        /search: 10/min\n";
  EXPECT_NE(config_error(head + "        /search/: 5/min\n")
                .find("line 7: layers[0].by_endpoint.limits./search/: route \"/search/\" matches "
                      "the same requests as route \"/search\""),
            std::string::npos)
      << config_error(head + "        /search/: 5/min\n");
  EXPECT_NE(config_error(head + "        \"/orders/{id\": 5/min\n").find("line 7: "),
            std::string::npos);
  EXPECT_NE(config_error(head + "        \"/files/**/x\": 5/min\n").find("after \"**\""),
            std::string::npos);
  EXPECT_NE(config_error(head + "        \"P(ST /x\": 5/min\n").find("bad method"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      case_sensitive: maybe\n").find("must be true or false"),
            std::string::npos);
  // Case-sensitive: /Search and /search are two routes.
  EXPECT_EQ(config_error(head + "        /Search: 5/min\n      case_sensitive: true\n"), "");
  EXPECT_NE(config_error(head + "        /Search: 5/min\n").find("matches the same requests"),
            std::string::npos);
}

TEST(EndpointLayer, KeysHoldTheRouteAsWrittenAndCanonicalPaths) {
  PolicySpec spec;
  spec.layers.push_back({.name = "endpoint",
                         .key = {"api_key", "endpoint"},
                         .by_endpoint = EndpointSelector{
                             .limits = {{"/orders/{id}/export", {.limit = 5, .period = 60'000'000}},
                                        {"POST /search", {.limit = 5, .period = 60'000'000}}}}});
  spec.layers.push_back({.name = "per_path",
                         .key = {"ip", "endpoint"},
                         .limit = RateSpec{.limit = 100, .period = 60'000'000}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  auto checks = (*policy)->resolve(
      {{"api_key", "k"}, {"ip", "192.0.2.1"}, {"endpoint", "//Orders/42/export/?x=1"}});
  ASSERT_TRUE(checks.has_value()) << checks.error().message;
  ASSERT_EQ(checks->size(), 2u);
  EXPECT_EQ((*checks)[0].key, "endpoint:1:k:19:/orders/{id}/export");
  EXPECT_EQ((*checks)[1].key, "per_path:9:192.0.2.1:17:/orders/42/export");
  EXPECT_EQ((*policy)->attributes_used(),
            (std::vector<std::string>{"api_key", "endpoint", "ip", "method"}));
  EXPECT_EQ((*policy)->route_attributes(), std::vector<std::string>{"endpoint"});
  // A bad path is an error naming the attribute, for every layer that reads it.
  auto bad = (*policy)->resolve({{"api_key", "k"}, {"ip", "192.0.2.1"}, {"endpoint", "/a%zz"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().field, "endpoint");
  EXPECT_NE(bad.error().message.find("\"endpoint\": path \"/a%zz\""), std::string::npos)
      << bad.error().message;
}

TEST(EndpointLayer, AShadowEndpointLayerNeverRefusesABadPath) {
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = RateSpec{1, 60'000'000}});
  spec.layers.push_back({.name = "trial",
                         .key = {"ip", "endpoint"},
                         .mode = LayerMode::kShadow,
                         .by_endpoint = EndpointSelector{
                             .limits = {{"POST /search", {.limit = 1, .period = 60'000'000}}}}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy.has_value());
  MemoryStore store;
  for (const char* path : {"/%zz", "/search"}) {  // a bad path; a method-less request
    auto decided = (*policy)->decide(
        store, {{"ip", std::string("192.0.2.") + path[1]}, {"endpoint", path}}, 1, 1'000'000);
    ASSERT_TRUE(decided.has_value()) << path << ": " << decided.error().message;
    EXPECT_TRUE(decided->allowed) << path;
    EXPECT_TRUE(decided->shadow_denied.empty()) << path;
  }
  EXPECT_TRUE((*policy)->route_attributes().empty());  // a shadow layer requires nothing
}

// Adding a shadow endpoint layer on another attribute changes nothing for the enforced layers:
// they key and refuse exactly as before.
TEST(EndpointLayer, AShadowEndpointLayerDoesNotChangeEnforcedKeys) {
  PolicySpec spec;
  spec.layers.push_back(
      {.name = "per_item", .key = {"ip", "item"}, .limit = RateSpec{5, 60'000'000}});
  auto before = Policy::make(spec);
  spec.layers.push_back(
      {.name = "trial",
       .key = {"ip", "item"},
       .mode = LayerMode::kShadow,
       .by_endpoint = EndpointSelector{.attribute = "item",
                                       .limits = {{"/a", {.limit = 1, .period = 60'000'000}}}}});
  auto after = Policy::make(spec);
  ASSERT_TRUE(before.has_value() && after.has_value());
  const Attributes request{{"ip", "192.0.2.1"}, {"item", "/%zz/A?x"}};
  auto keyed_before = (*before)->resolve(request);
  auto keyed_after = (*after)->resolve(request);
  ASSERT_TRUE(keyed_before.has_value() && keyed_after.has_value());
  EXPECT_EQ((*keyed_after)[0].key, (*keyed_before)[0].key);
  EXPECT_EQ((*keyed_after)[0].key, "per_item:9:192.0.2.1:8:/%zz/A?x");
}

}  // namespace
}  // namespace spillway::policy
