// examples/envoy/llm-tokens/ works as its README says, without an Envoy: rules.yaml loads with
// the rls loader (domain llm, tokens per minute per api_key, charge: after_response); envoy.yaml
// sends what those rules expect (its per-route domain, the api_key descriptor from the same
// header in the request-time entry and in the apply_on_stream_done one, whose hits_addend reads
// the dynamic metadata that header_to_metadata writes from the usage header, the rate limit
// service on the port of the README's serve command); and the flow plays out on the rules: a
// request checked, its usage charged as debt when the stream is done, the key's next requests
// OVER_LIMIT until the debt is paid off.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/clock.h"
#include "spillway/memory_store.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_engine.h"

namespace spillway {
namespace {

namespace fs = std::filesystem;

const fs::path kExample = fs::path(SPILLWAY_SOURCE_DIR) / "examples/envoy/llm-tokens";
constexpr Micros kStart = 19'676 * kMicrosPerDay;  // a minute's start

Result<rls::RlsRules> example_rules() {
  return rls::load_rls_rules((kExample / "rules.yaml").string());
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The node at the keys' path through nested maps, or an undefined node where one is missing.
// (Recursion, not a loop: assigning a YAML::Node writes through it into the tree.)
YAML::Node at(const YAML::Node& node, const std::vector<std::string>& keys, std::size_t i = 0) {
  if (i == keys.size()) return node;
  if (!node.IsDefined() || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return at(node[keys[i]], keys, i + 1);
}

std::string text(const YAML::Node& node) {
  return node.IsDefined() && node.IsScalar() ? node.as<std::string>() : std::string();
}

// The element of a sequence whose `field` is `value`, or an undefined node.
YAML::Node element(const YAML::Node& list, const std::string& field, const std::string& value) {
  if (!list.IsDefined() || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& item : list) {
    if (text(at(item, {field})) == value) return item;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

TEST(EnvoyLlmExample, TheRulesChargeTokensAfterTheResponse) {
  Result<rls::RlsRules> rules = example_rules();
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  ASSERT_EQ(rules->domains.size(), 1u);
  ASSERT_TRUE(rules->domains.contains("llm"));
  const rls::DomainRules& llm = rules->domains.at("llm");
  ASSERT_EQ(llm.descriptors.size(), 1u);
  const rls::DescriptorRule& api_key = llm.descriptors[0];
  EXPECT_EQ(api_key.key, "api_key");
  EXPECT_EQ(api_key.value, "") << "every key's value";
  EXPECT_FALSE(api_key.shadow_mode);
  ASSERT_TRUE(api_key.rate_limit.has_value());
  const rls::RuleLimit& tpm = *api_key.rate_limit;
  EXPECT_TRUE(tpm.charge_after_response);
  EXPECT_EQ(tpm.name, "tpm");
  EXPECT_EQ(tpm.requests_per_unit, 100'000u);
  EXPECT_EQ(tpm.unit, rls::Unit::kMinute);
  ASSERT_TRUE(tpm.limit.has_value());
  EXPECT_EQ(tpm.limit->algorithm(), Algorithm::kSlidingWindow);
}

TEST(EnvoyLlmExample, EnvoySendsWhatTheRulesExpect) {
  Result<rls::RlsRules> rules = example_rules();
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  const YAML::Node envoy = YAML::LoadFile((kExample / "envoy.yaml").string());

  const YAML::Node listeners = at(envoy, {"static_resources", "listeners"});
  ASSERT_TRUE(listeners.IsDefined() && listeners.IsSequence() && listeners.size() == 1);
  const YAML::Node hcm = at(element(at(listeners[0]["filter_chains"][0], {"filters"}), "name",
                                    "envoy.filters.network.http_connection_manager"),
                            {"typed_config"});
  ASSERT_TRUE(hcm.IsDefined()) << "an http_connection_manager";

  // The HTTP filters: usage header to metadata, the rate limit filter, the router last.
  const YAML::Node filters = at(hcm, {"http_filters"});
  ASSERT_TRUE(filters.IsDefined() && filters.IsSequence() && filters.size() == 3);
  EXPECT_EQ(text(at(filters[filters.size() - 1], {"name"})), "envoy.filters.http.router");
  const YAML::Node ratelimit = element(filters, "name", "envoy.filters.http.ratelimit");
  ASSERT_TRUE(ratelimit.IsDefined());
  EXPECT_EQ(text(at(ratelimit, {"typed_config", "@type"})),
            "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit");
  EXPECT_TRUE(rules->domains.contains(text(at(ratelimit, {"typed_config", "domain"}))));
  const YAML::Node service = at(ratelimit, {"typed_config", "rate_limit_service"});
  EXPECT_EQ(text(at(service, {"transport_api_version"})), "V3");
  const std::string rls_cluster = text(at(service, {"grpc_service", "envoy_grpc", "cluster_name"}));
  ASSERT_FALSE(rls_cluster.empty());

  // spillway's cluster: HTTP/2, on the port the README's `spillway serve --grpc-listen` gives.
  const YAML::Node cluster =
      element(at(envoy, {"static_resources", "clusters"}), "name", rls_cluster);
  ASSERT_TRUE(cluster.IsDefined()) << "the cluster " << rls_cluster;
  EXPECT_TRUE(at(cluster, {"typed_extension_protocol_options",
                           "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                           "explicit_http_config", "http2_protocol_options"})
                  .IsDefined())
      << "gRPC needs HTTP/2";
  const std::string port = text(at(cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0],
                                   {"endpoint", "address", "socket_address", "port_value"}));
  ASSERT_FALSE(port.empty());
  const std::string readme = read_text(kExample / "README.md");
  EXPECT_NE(readme.find("spillway serve --grpc-listen 127.0.0.1:" + port +
                        " --rls-config examples/envoy/llm-tokens/rules.yaml"),
            std::string::npos)
      << "the README's serve command listens where Envoy calls (port " << port << ")";

  // The rate limited route: its per-route config for that filter, with the rules' domain.
  const YAML::Node routes = at(hcm, {"route_config", "virtual_hosts"})[0]["routes"];
  ASSERT_TRUE(routes.IsDefined() && routes.IsSequence());
  YAML::Node per_route(YAML::NodeType::Undefined);
  YAML::Node route(YAML::NodeType::Undefined);
  for (const YAML::Node& r : routes) {
    const YAML::Node config = at(r, {"typed_per_filter_config", "envoy.filters.http.ratelimit"});
    if (config.IsDefined()) {
      ASSERT_FALSE(per_route.IsDefined()) << "one rate limited route";
      per_route.reset(config);
      route.reset(r);
    }
  }
  ASSERT_TRUE(per_route.IsDefined()) << "a route with the rate limit filter's per-route config";
  EXPECT_EQ(text(at(per_route, {"@type"})),
            "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute");
  EXPECT_TRUE(rules->domains.contains(text(at(per_route, {"domain"}))))
      << "the per-route domain is the rules' domain";

  // Two entries: at request time without a hits_addend, and when the stream is done with one.
  const YAML::Node rate_limits = at(per_route, {"rate_limits"});
  ASSERT_TRUE(rate_limits.IsDefined() && rate_limits.IsSequence() && rate_limits.size() == 2);
  YAML::Node on_request(YAML::NodeType::Undefined);
  YAML::Node on_done(YAML::NodeType::Undefined);
  for (const YAML::Node& entry : rate_limits) {
    const YAML::Node done = at(entry, {"apply_on_stream_done"});
    if (done.IsDefined() && done.as<bool>()) {
      on_done.reset(entry);
    } else {
      on_request.reset(entry);
    }
  }
  ASSERT_TRUE(on_request.IsDefined()) << "a request-time entry";
  ASSERT_TRUE(on_done.IsDefined()) << "an apply_on_stream_done entry";
  EXPECT_FALSE(at(on_request, {"hits_addend"}).IsDefined())
      << "at request time the descriptor must carry no hits_addend of its own: with one, "
         "charge: after_response would charge it instead of checking it";
  // Both send the same descriptor: one entry, the rules' key, from the API key header.
  EXPECT_EQ(YAML::Dump(at(on_request, {"actions"})), YAML::Dump(at(on_done, {"actions"})));
  const YAML::Node actions = at(on_request, {"actions"});
  ASSERT_TRUE(actions.IsDefined() && actions.IsSequence() && actions.size() == 1);
  const std::string header = text(at(actions[0], {"request_headers", "header_name"}));
  EXPECT_EQ(text(at(actions[0], {"request_headers", "descriptor_key"})),
            rules->domains.at("llm").descriptors.at(0).key);
  // The route is taken only with that header (without it there is no descriptor to count).
  const YAML::Node required = element(at(route, {"match", "headers"}), "name", header);
  ASSERT_TRUE(required.IsDefined()) << "the route matches on " << header;
  EXPECT_EQ(text(at(required, {"present_match"})), "true");

  // The stream-done hits_addend reads the metadata header_to_metadata writes, as a number.
  const std::string format = text(at(on_done, {"hits_addend", "format"}));
  const std::string prefix = "%DYNAMIC_METADATA(", suffix = ")%";
  ASSERT_TRUE(format.starts_with(prefix) && format.ends_with(suffix)) << format;
  const std::string metadata =
      format.substr(prefix.size(), format.size() - prefix.size() - suffix.size());
  const std::size_t colon = metadata.find(':');
  ASSERT_NE(colon, std::string::npos) << format;
  const YAML::Node to_metadata = element(filters, "name", "envoy.filters.http.header_to_metadata");
  const YAML::Node response_rules = at(to_metadata, {"typed_config", "response_rules"});
  ASSERT_TRUE(response_rules.IsDefined() && response_rules.IsSequence() &&
              response_rules.size() == 1);
  const YAML::Node present = at(response_rules[0], {"on_header_present"});
  EXPECT_EQ(text(at(present, {"metadata_namespace"})), metadata.substr(0, colon));
  EXPECT_EQ(text(at(present, {"key"})), metadata.substr(colon + 1));
  EXPECT_EQ(text(at(present, {"type"})), "NUMBER");
  const std::string usage_header = text(at(response_rules[0], {"header"}));
  ASSERT_FALSE(usage_header.empty());
  EXPECT_NE(readme.find(usage_header), std::string::npos) << "the README names " << usage_header;
}

// The README's flow on the example's rules, on a clock that moves only when told.
TEST(EnvoyLlmExample, UsageChargedWhenTheStreamIsDoneDeniesTheKeysNextRequests) {
  Result<rls::RlsRules> rules = example_rules();
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  const auto clock = std::make_shared<ManualClock>(kStart);
  MemoryStore store(MemoryStoreOptions{.clock = clock});
  rls::RlsEngine engine(store, std::make_shared<const rls::RlsRules>(std::move(*rules)),
                        rls::RlsOptions{.clock = clock});
  // One descriptor [api_key=key]; `tokens` is its own hits_addend (the stream-done call).
  const auto ask = [&](const std::string& key, std::optional<std::uint64_t> tokens) {
    rls::RlsRequest request{.domain = "llm"};
    request.descriptors.push_back({.entries = {{"api_key", key}}, .hits_addend = tokens});
    std::optional<Result<rls::RlsResponse>> out;
    engine.should_rate_limit(request, [&](Result<rls::RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    return out && *out ? **out : rls::RlsResponse{};
  };
  const rls::CurrentLimit tpm{"tpm", 100'000, rls::Unit::kMinute};

  rls::RlsResponse r = ask("k1", std::nullopt);  // the request arrives: checked, costs 1
  EXPECT_EQ(r.overall_code, rls::Code::kOk);
  ASSERT_EQ(r.statuses.size(), 1u);
  EXPECT_EQ(r.statuses[0].current_limit, tpm);
  EXPECT_EQ(r.statuses[0].limit_remaining, 99'999u);

  r = ask("k1", 150'000);  // its stream is done: 150,000 tokens, past the limit
  EXPECT_EQ(r.overall_code, rls::Code::kOk) << "a charge is never denied";
  EXPECT_EQ(r.statuses.at(0).limit_remaining, 0u) << "in debt";

  r = ask("k1", std::nullopt);
  EXPECT_EQ(r.overall_code, rls::Code::kOverLimit) << "the key's next request";
  EXPECT_GT(r.statuses.at(0).duration_until_reset, 0);
  EXPECT_EQ(ask("k2", std::nullopt).overall_code, rls::Code::kOk) << "another key";

  clock->advance(kMicrosPerMinute);
  EXPECT_EQ(ask("k1", std::nullopt).overall_code, rls::Code::kOverLimit)
      << "sliding_window: the debt still weighs on the next minute";
  clock->advance(kMicrosPerMinute);
  r = ask("k1", std::nullopt);
  EXPECT_EQ(r.overall_code, rls::Code::kOk) << "paid off two minutes later";
  EXPECT_EQ(r.statuses.at(0).limit_remaining, 99'999u);
}

}  // namespace
}  // namespace spillway
