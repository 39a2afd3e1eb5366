// Priorities and reserves as the config file writes them (docs/SPEC.md §2.4, §7): `priority:`
// and a layer's `reserve:` read into the policy, the policy's views of a limit per level, and
// every way to get them wrong refused with an error that names the field and the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/config/config.h"

namespace spillway::policy {
namespace {

constexpr char kLevels[] = R"(priority:
  levels: [critical, normal, sheddable]
  default: normal
)";

std::string reserving_layer(const std::string& fields) {
  return std::string(kLevels) +
         "layers:\n  - name: api\n    key: [api_key]\n    algorithm: fixed_window\n"
         "    limit: 7/1h\n" +
         fields;
}

TEST(PriorityConfig, LevelsAndReservesAreReadAndEachLevelSeesItsShare) {
  Result<Config> config =
      parse_config(reserving_layer("    reserve: {critical: 20%, normal: 12.5%}\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_TRUE(config->policy.priority.has_value());
  EXPECT_EQ(config->policy.priority->attribute, "priority");
  EXPECT_EQ(config->policy.priority->levels,
            (std::vector<std::string>{"critical", "normal", "sheddable"}));
  EXPECT_EQ(config->policy.priority->default_level, "normal");
  EXPECT_EQ(config->policy.layers[0].reserve,
            (std::map<std::string, std::int64_t>{{"critical", 200}, {"normal", 125}}));
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  // 7 per hour: critical fills 7; normal floor(7 x 0.8) = 5; sheddable floor(7 x 0.675) = 4.
  const std::vector<std::pair<std::string, std::int64_t>> seen = {
      {"critical", 7}, {"normal", 5}, {"sheddable", 4}, {"", 5}};
  for (const auto& [level, fills] : seen) {
    Attributes attributes{{"api_key", "k"}};
    if (!level.empty()) attributes["priority"] = level;
    auto checks = (*policy)->resolve(attributes);
    ASSERT_TRUE(checks.has_value()) << checks.error().message;
    const Policy::Check& check = checks->front();
    EXPECT_EQ(check.limit->admit_capacity(), fills) << level;
    EXPECT_EQ(check.limit->limit(), 7) << level;
    EXPECT_EQ(*check.priority, level.empty() ? "normal" : level);
  }
  auto unknown = (*policy)->resolve({{"api_key", "k"}, {"priority", "urgent"}});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().field, "priority");
  EXPECT_NE(unknown.error().message.find("must be one of critical, normal, sheddable"),
            std::string::npos)
      << unknown.error().message;
}

TEST(PriorityConfig, TheAttributeMayBeRenamedAndAReserveOnABucketKeepsOfItsBurst) {
  Result<Config> config = parse_config(R"(priority:
  attribute: tier
  levels: [gold, bronze]
  default: bronze
layers:
  - name: api
    key: [api_key]
    algorithm: gcra
    limit: 100/s
    burst: 10
    reserve: {gold: 35%}
)");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  auto policy = Policy::make(config->policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  auto bronze = (*policy)->resolve({{"api_key", "k"}, {"tier", "bronze"}});
  ASSERT_TRUE(bronze.has_value()) << bronze.error().message;
  EXPECT_EQ(bronze->front().limit->admit_capacity(), 6) << "floor(10 x 0.65) of the burst";
  EXPECT_EQ(bronze->front().limit->reserved(), 4);
  auto gold = (*policy)->resolve({{"api_key", "k"}, {"tier", "gold"}});
  ASSERT_TRUE(gold.has_value());
  EXPECT_EQ(gold->front().limit->reserved(), 0);
  EXPECT_EQ(gold->front().view, nullptr) << "the top level uses the layer's own limit";
}

TEST(PriorityConfig, EveryMistakeIsRefusedNamingTheFieldAndWhy) {
  struct Case {
    std::string yaml;
    std::string says;
  };
  const std::string layer =
      "layers:\n  - name: api\n    key: [api_key]\n    algorithm: fixed_window\n"
      "    limit: 7/1h\n";
  const std::vector<Case> cases = {
      {"priority:\n  levels: [critical]\n  default: critical\n" + layer,
       "priority.levels: must list at least two levels"},
      {"priority:\n  levels: critical\n  default: critical\n" + layer,
       "priority.levels: must list at least two levels"},
      {"priority:\n  levels: [a, b, a]\n  default: a\n" + layer, "level \"a\" is listed twice"},
      {"priority:\n  levels: [a, \"b c\"]\n  default: a\n" + layer,
       "level \"b c\" must be letters, digits"},
      {"priority:\n  levels: [a, b]\n  default: c\n" + layer, "\"c\" is not one of the levels"},
      {"priority:\n  levels: [a, b]\n" + layer, "priority: missing field default"},
      {"priority:\n  default: a\n" + layer, "priority: missing field levels"},
      {"priority:\n  levels: [a, b]\n  default: a\n  atribute: x\n" + layer,
       "priority.atribute: unknown field (expected attribute, levels, default)"},
      {"priority:\n  attribute: \"\"\n  levels: [a, b]\n  default: a\n" + layer,
       "priority.attribute"},
      {"priority: [a, b]\n" + layer, "priority: must be a mapping"},
      {layer + "    reserve: {critical: 20%}\n", "a reserve is kept for priority levels"},
      {reserving_layer("    reserve: {critcal: 20%}\n"),
       "reserve.critcal: unknown field (expected critical, normal, sheddable)"},
      {reserving_layer("    reserve: {critical: 20}\n"), "a reserve \"20\" must be a percentage"},
      {reserving_layer("    reserve: {critical: 0%}\n"), "must be a percentage from 0.1% to 100%"},
      {reserving_layer("    reserve: {critical: 101%}\n"),
       "must be a percentage from 0.1% to 100%"},
      {reserving_layer("    reserve: {critical: -5%}\n"), "must be a percentage"},
      {reserving_layer("    reserve: {critical: 60%, normal: 50%}\n"),
       "reserve: the shares add up to 110.0%, more than 100%"},
      {reserving_layer("    reserve: {sheddable: 10%}\n"), "the lowest level, keeps nothing"},
      {reserving_layer("    reserve: {critical: 20%, sheddable: 10%}\n"),
       "the lowest level, keeps nothing"},
      {reserving_layer("    reserve: 20%\n"), "reserve: must be a mapping"},
      {reserving_layer("    reserve: {critical: 20%}\n    sync: lease\n"),
       "a leased layer (sync: lease) cannot keep a reserve"},
  };
  for (const Case& c : cases) {
    Result<Config> config = parse_config(c.yaml);
    ASSERT_FALSE(config.has_value()) << c.yaml;
    EXPECT_NE(config.error().message.find(c.says), std::string::npos)
        << c.yaml << "\n-> " << config.error().message;
    EXPECT_EQ(config.error().message.rfind("line ", 0), 0u) << config.error().message;
  }
  // A broken priority section is reported once: its layers' reserves add nothing.
  Result<Config> broken =
      parse_config("priority:\n  levels: [a]\n  default: a\n" + layer + "    reserve: {a: 10%}\n");
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().message.find("reserve"), std::string::npos) << broken.error().message;
}

TEST(PriorityConfig, PolicyMakeRefusesWhatTheFileCouldNotSay) {
  PolicySpec spec;
  LayerSpec layer{.name = "api", .key = {"api_key"}, .algorithm = Algorithm::kFixedWindow};
  layer.limit = RateSpec{.limit = 10, .period = kMicrosPerSecond};
  layer.reserve = {{"critical", 200}};
  spec.layers = {layer};
  auto none = Policy::make(spec);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("reserve needs the policy's priority levels"),
            std::string::npos)
      << none.error().message;
  spec.priority = PrioritySpec{.levels = {"critical", "normal"}, .default_level = "normal"};
  spec.layers[0].reserve = {{"urgent", 200}};
  auto unknown = Policy::make(spec);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("names \"urgent\", not a priority level"),
            std::string::npos)
      << unknown.error().message;
  spec.layers[0].reserve = {{"critical", 1001}};
  EXPECT_FALSE(Policy::make(spec).has_value());
  spec.priority->default_level = "none";
  spec.layers[0].reserve = {{"critical", 200}};
  auto fallback = Policy::make(spec);
  ASSERT_FALSE(fallback.has_value());
  EXPECT_NE(fallback.error().message.find("default \"none\" is not a level"), std::string::npos);
}

TEST(PriorityConfig, AShareThatLeavesALevelNothingOrAnAttributeTakenIsRefusedWhenBuilt) {
  // 1 per second, burst 1: any share under 100 % rounds to all of it.
  Result<Config> small = parse_config(std::string(kLevels) + R"(layers:
  - name: tiny
    key: [api_key]
    algorithm: gcra
    limit: 1/s
    reserve: {critical: 20%}
)");
  // Refused when the file is read (with its line: validate and serve say the same) and by
  // Policy::make for a spec built in code.
  ASSERT_FALSE(small.has_value());
  EXPECT_NE(small.error().message.find("line 9: layers[0].reserve: layer \"tiny\": reserve "
                                       "leaves normal requests nothing of gcra 1/1s burst 1 "
                                       "(capacity 1"),
            std::string::npos)
      << small.error().message;
  PolicySpec tiny;
  tiny.priority = PrioritySpec{.levels = {"critical", "normal"}, .default_level = "normal"};
  LayerSpec layer{.name = "tiny", .key = {"api_key"}, .algorithm = Algorithm::kGcra};
  layer.limit = RateSpec{.limit = 1, .period = kMicrosPerSecond};
  layer.reserve = {{"critical", 200}};
  tiny.layers = {layer};
  auto cliff = Policy::make(tiny);
  ASSERT_FALSE(cliff.has_value());
  EXPECT_NE(cliff.error().message.find("reserve leaves normal requests nothing"), std::string::npos)
      << cliff.error().message;
  // The same in a plan's limit: every limit the layer knows is checked.
  Result<Config> plans = parse_config(std::string(kLevels) + R"(layers:
  - name: gw
    key: [api_key]
    algorithm: fixed_window
    reserve: {critical: 60%}
    by_plan:
      attribute: api_key
      default: free
      plans: {free: 2/1m, pro: 100/1m}
)");
  ASSERT_FALSE(plans.has_value()) << "free: floor(2 x 0.4) leaves normal nothing";
  EXPECT_NE(plans.error().message.find("nothing of fixed_window 2/1m"), std::string::npos)
      << plans.error().message;
  // The priority attribute must be its own.
  for (const std::string taken : {"api_key", "ip", "endpoint", "method"}) {
    Result<Config> clash = parse_config("priority:\n  attribute: " + taken +
                                        "\n  levels: [a, b]\n  default: b\n" + R"(layers:
  - name: api
    key: [api_key]
    limit: 10/1m
    reserve: {a: 10%}
)");
    ASSERT_TRUE(clash.has_value()) << clash.error().message;
    auto made = Policy::make(clash->policy);
    ASSERT_FALSE(made.has_value()) << taken;
    EXPECT_NE(made.error().message.find("already uses for something else"), std::string::npos)
        << made.error().message;
  }
  PolicySpec one_level;
  one_level.layers = tiny.layers;
  one_level.layers[0].reserve.clear();
  one_level.priority = PrioritySpec{.levels = {"only"}, .default_level = "only"};
  EXPECT_FALSE(Policy::make(one_level).has_value()) << "one level sheds nothing";
}

TEST(PriorityConfig, KeptUnitsAreTheCapacityLessWhatTheLevelFillsRoundedDown) {
  EXPECT_EQ(kept_units(10, 200), 2);
  EXPECT_EQ(kept_units(7, 200), 2);  // fills floor(5.6) = 5
  EXPECT_EQ(kept_units(1, 1), 1);    // fills floor(0.999) = 0
  EXPECT_EQ(kept_units(1000, 1), 1);
  EXPECT_EQ(kept_units(5, 1000), 5);
  const std::int64_t big = (std::int64_t{1} << 52) - 1;
  EXPECT_EQ(kept_units(big, 500), big - big / 2) << "no overflow near 2^52";
}

}  // namespace
}  // namespace spillway::policy
