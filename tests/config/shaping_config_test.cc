// A layer's max_delay (docs/SPEC.md §2.2, §7) and server.max_delayed as the config file writes
// them: read into the policy, and every way to get them wrong refused with an error that names
// the field and the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "src/rls/rls_config.h"

namespace spillway::policy {
namespace {

std::string shaped_layer(const std::string& fields) {
  return "layers:\n  - name: smooth\n    key: [ip]\n    limit: 5/s\n" + fields;
}

TEST(ShapingConfig, AMaxDelayIsReadIntoTheLayerAndItsLimits) {
  Result<Config> config =
      parse_config(shaped_layer("    algorithm: gcra\n    burst: 1\n    max_delay: 2s\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->policy.layers.size(), 1u);
  EXPECT_EQ(config->policy.layers[0].max_delay, 2 * kMicrosPerSecond);
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  auto checks = (*policy)->resolve({{"ip", "10.0.0.1"}});
  ASSERT_TRUE(checks.has_value()) << checks.error().message;
  ASSERT_EQ(checks->size(), 1u);
  EXPECT_EQ(checks->front().limit->max_delay(), 2 * kMicrosPerSecond);
  // A layer without one never delays, and the server holds 10,000 answers by default.
  Result<Config> plain = parse_config(shaped_layer(""));
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_EQ(plain->policy.layers[0].max_delay, 0);
  EXPECT_EQ(plain->server.max_delayed, 10'000);
  // Plans and routes get the layer's delay too.
  Result<Config> plans = parse_config(
      "layers:\n  - name: gw\n    key: [api_key]\n    algorithm: token_bucket\n"
      "    max_delay: 500ms\n    by_plan:\n      default: free\n      plans: {free: 10/s, pro: "
      "100/s}\n");
  ASSERT_TRUE(plans.has_value()) << plans.error().message;
  auto built = Policy::make(plans->policy);
  ASSERT_TRUE(built.has_value()) << built.error().message;
  auto gw = (*built)->resolve({{"api_key", "k"}});
  ASSERT_TRUE(gw.has_value());
  EXPECT_EQ(gw->front().limit->max_delay(), 500 * kMicrosPerMilli);
}

TEST(ShapingConfig, EveryWrongMaxDelayIsRefusedNamingTheFieldAndWhy) {
  struct Case {
    std::string yaml;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {shaped_layer("    algorithm: fixed_window\n    max_delay: 500ms\n"),
       {"layers[0].max_delay", "applies only to token_bucket and gcra, not fixed_window"}},
      {shaped_layer("    algorithm: sliding_log\n    max_delay: 1s\n"),
       {"layers[0].max_delay", "not sliding_log"}},
      {shaped_layer("    algorithm: sliding_window\n    max_delay: 1s\n"),
       {"layers[0].max_delay", "not sliding_window"}},
      {shaped_layer("    max_delay: 500ms\n    sync: lease\n"),
       {"layers[0].max_delay", "needs sync: exact"}},
      {shaped_layer("    max_delay: 1500us\n"), {"layers[0].max_delay", "whole milliseconds"}},
      {shaped_layer("    max_delay: soon\n"), {"layers[0].max_delay"}},
      {shaped_layer("    max_delay: -5s\n"), {"layers[0].max_delay"}},
      {shaped_layer("    max_delay: [1s]\n"), {"layers[0].max_delay"}},
      {shaped_layer("    max_delay: \"\"\n"), {"layers[0].max_delay"}},
      {shaped_layer("    max_dealy: 1s\n"), {"max_dealy"}},
      // 10^9 per ms for 10^6 s: the scaled wait would pass 2^52 and lose exactness.
      {"layers:\n  - name: huge\n    key: [ip]\n    limit: 1000000000/1ms\n    max_delay: "
       "1000000s\n",
       {"layers[0].limit", "is too long for", "keeps the arithmetic exact"}},
      {"server:\n  max_delayed: -1\n", {"server.max_delayed"}},
      {"server:\n  max_delayed: 2000000\n", {"server.max_delayed"}},
      {"server:\n  max_delayed: many\n", {"server.max_delayed"}},
  };
  for (const Case& c : cases) {
    Result<Config> config = parse_config(c.yaml);
    ASSERT_FALSE(config.has_value()) << c.yaml;
    for (const std::string& part : c.says) {
      EXPECT_NE(config.error().message.find(part), std::string::npos)
          << c.yaml << "\n-> " << config.error().message;
    }
  }
  // The policy refuses the same pairs when built by a program (no config file).
  PolicySpec spec = seed_policy_spec();
  spec.layers[0].max_delay = kMicrosPerSecond;
  spec.layers[0].lease = LeaseSpec{};
  auto leased = Policy::make(spec);
  ASSERT_FALSE(leased.has_value());
  EXPECT_NE(leased.error().message.find("needs sync: exact"), std::string::npos)
      << leased.error().message;
  spec.layers[0].lease.reset();
  spec.layers[0].algorithm = Algorithm::kSlidingWindow;
  auto window = Policy::make(spec);
  ASSERT_FALSE(window.has_value());
  EXPECT_NE(window.error().message.find("max_delay applies only to"), std::string::npos)
      << window.error().message;
}

TEST(ShapingConfig, ZeroOrOffIsNoDelayOnAnyAlgorithm) {
  for (const char* off : {"0", "off", "0ms", "00s"}) {
    Result<Config> config = parse_config(
        shaped_layer("    algorithm: fixed_window\n    max_delay: " + std::string(off) + "\n"));
    ASSERT_TRUE(config.has_value()) << off << ": " << config.error().message;
    EXPECT_EQ(config->policy.layers[0].max_delay, 0);
  }
  // A zero that is not a duration is still an error naming the field.
  for (const char* bad : {"0.5s", "0x", "0 ms", "Off"}) {
    Result<Config> config = parse_config(shaped_layer("    max_delay: " + std::string(bad) + "\n"));
    ASSERT_FALSE(config.has_value()) << bad;
    EXPECT_NE(config.error().message.find("layers[0].max_delay"), std::string::npos)
        << config.error().message;
  }
}

TEST(ShapingConfig, MaxDelayedZeroIsAllowedAndMeansNoneHeld) {
  Result<Config> config = parse_config("server:\n  max_delayed: 0\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.max_delayed, 0);
}

TEST(ShapingConfig, EnvoysRulesRefuseMaxDelaySayingWhy) {
  auto rules = rls::parse_rls_yaml(
      "domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: "
      "second\n      requests_per_unit: 5\n      max_delay: 1s\n");
  ASSERT_FALSE(rules.has_value());
  EXPECT_NE(rules.error().message.find("max_delay"), std::string::npos) << rules.error().message;
  EXPECT_NE(rules.error().message.find("cannot delay"), std::string::npos) << rules.error().message;
}

}  // namespace
}  // namespace spillway::policy
