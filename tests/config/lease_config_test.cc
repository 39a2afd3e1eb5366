// A layer's `sync` and `lease` fields (docs/SPEC.md §2.3, §7): read into LayerSpec::lease with
// their defaults, and every wrong spelling is one error that names its line and field.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "src/config/config.h"

namespace spillway::policy {
namespace {

std::string layer_with(const std::string& extra) {
  return "layers:\n  - name: key\n    key: [api_key]\n    limit: 600/min\n" + extra;
}

TEST(LeaseConfig, SyncLeaseTakesTheDefaultsOrTheGivenSettings) {
  Result<Config> plain = parse_config(layer_with(""));
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_FALSE(plain->policy.layers[0].lease) << "exact by default";

  Result<Config> exact = parse_config(layer_with("    sync: exact\n"));
  ASSERT_TRUE(exact.has_value()) << exact.error().message;
  EXPECT_FALSE(exact->policy.layers[0].lease);

  Result<Config> defaults = parse_config(layer_with("    sync: lease\n"));
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message;
  ASSERT_TRUE(defaults->policy.layers[0].lease);
  EXPECT_EQ(*defaults->policy.layers[0].lease, LeaseSpec{});

  Result<Config> given =
      parse_config(layer_with("    sync: lease\n    lease: {max_age: 250ms, max_share: 2.5%}\n"));
  ASSERT_TRUE(given.has_value()) << given.error().message;
  ASSERT_TRUE(given->policy.layers[0].lease);
  EXPECT_EQ(given->policy.layers[0].lease->max_age, 250'000);
  EXPECT_EQ(given->policy.layers[0].lease->max_share_permille, 25);

  Result<Config> all =
      parse_config(layer_with("    sync: lease\n    lease:\n      max_share: 100%\n"));
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_EQ(all->policy.layers[0].lease->max_share_permille, 1000);
  EXPECT_EQ(all->policy.layers[0].lease->max_age, kDefaultLeaseMaxAge);
}

TEST(LeaseConfig, WrongSettingsAreOneErrorNamingLineAndField) {
  struct Case {
    std::string extra;
    std::string line;  // "line N"
    std::string says;  // part of the message
  };
  const Case cases[] = {
      {"    sync: leased\n", "line 5", "\"leased\" must be exact or lease"},
      {"    sync: [lease]\n", "line 5", "layers[0].sync"},
      {"    lease: {max_age: 50ms}\n", "line 5", "need sync: lease"},
      {"    sync: exact\n    lease: {max_age: 50ms}\n", "line 6", "need sync: lease"},
      {"    sync: lease\n    lease: {max_age: 0ms}\n", "line 6", "max_age"},
      {"    sync: lease\n    lease: {max_age: 2h}\n", "line 6", "between 1ms and 1h"},
      {"    sync: lease\n    lease: {max_age: 1500us}\n", "line 6", "whole milliseconds"},
      {"    sync: lease\n    lease: {max_share: 10}\n", "line 6", "must be a percentage"},
      {"    sync: lease\n    lease: {max_share: 0%}\n", "line 6", "0.1% to 100%"},
      {"    sync: lease\n    lease: {max_share: 100.1%}\n", "line 6", "0.1% to 100%"},
      {"    sync: lease\n    lease: {max_share: 1.25%}\n", "line 6", "must be a percentage"},
      {"    sync: lease\n    lease: {max_share: -5%}\n", "line 6", "must be a percentage"},
      {"    sync: lease\n    lease: {max_age: 50ms, burst: 3}\n", "line 6", "burst"},
      {"    sync: lease\n    lease: 100ms\n", "line 6", "layers[0].lease"},
  };
  for (const Case& c : cases) {
    Result<Config> config = parse_config(layer_with(c.extra));
    ASSERT_FALSE(config.has_value()) << c.extra;
    EXPECT_NE(config.error().message.find(c.line), std::string::npos)
        << c.extra << " -> " << config.error().message;
    EXPECT_NE(config.error().message.find(c.says), std::string::npos)
        << c.extra << " -> " << config.error().message;
  }
}

// The leased layer shown in README.md ("```yml") loads as it says.
TEST(LeaseConfig, TheReadmeExampleLoads) {
  std::ifstream file(std::string(SPILLWAY_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
  const std::size_t begin = readme.find("```yml\n", readme.find("### Quota leases"));
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = readme.find("```", begin + 7);
  ASSERT_NE(end, std::string::npos);
  Result<Config> config = parse_config(readme.substr(begin + 7, end - begin - 7));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->policy.layers.size(), 1u);
  ASSERT_TRUE(config->policy.layers[0].lease);
  EXPECT_EQ(*config->policy.layers[0].lease, LeaseSpec{});
}

}  // namespace
}  // namespace spillway::policy
