// envoyproxy/ratelimit's YAML rules: every field, spillway's extensions (algorithm, burst,
// period), errors naming line and field, the unit helpers, and loading a file or a directory
// (hidden files and other extensions skipped, symlinks followed, a domain defined once).
#include "src/rls/rls_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace spillway::rls {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFull = R"(domain: cfg_full
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
      name: users_db
  - key: database
    value: logs*
    shadow_mode: true
    detailed_metric: yes
    rate_limit:
      unit: Minute
      requests_per_unit: 7
      algorithm: gcra
      burst: 3
      replaces:
        - name: users_db
  - key: ldap
    rate_limit:
      unlimited: true
  - key: blocked
    rate_limit:
      unit: hour
      requests_per_unit: 0
  - key: tenant
    descriptors:
      - key: user
        rate_limit:
          period: 5m
          requests_per_unit: 10
          algorithm: token_bucket
      - key: bot
        rate_limit:
          period: 1d
          requests_per_unit: 2
)";

DomainRules parse_ok(std::string_view text) {
  Result<DomainRules> rules = parse_rls_yaml(text, "test.yaml");
  EXPECT_TRUE(rules.has_value()) << rules.error().message;
  return rules ? *rules : DomainRules{};
}

std::string parse_error(std::string_view text) {
  Result<DomainRules> rules = parse_rls_yaml(text);
  EXPECT_FALSE(rules.has_value()) << "expected an error for:\n" << text;
  if (rules) return "";
  EXPECT_EQ(rules.error().code, Errc::kInvalidArgument);
  return rules.error().message;
}

// A fresh directory under the test temp directory.
std::string make_temp_dir(const std::string& name) {
  std::string pattern = ::testing::TempDir() + "/" + name + "_XXXXXX";
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return pattern;
}

void write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string domain_yaml(std::string_view domain, int limit = 5) {
  return "domain: " + std::string(domain) +
         "\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n"
         "      requests_per_unit: " +
         std::to_string(limit) + "\n";
}

TEST(RlsConfig, ParsesEveryField) {
  const DomainRules rules = parse_ok(kFull);
  EXPECT_EQ(rules.domain, "cfg_full");
  EXPECT_EQ(rules.source, "test.yaml");
  ASSERT_EQ(rules.descriptors.size(), 5u);

  const DescriptorRule& users = rules.descriptors[0];
  EXPECT_EQ(users.key, "database");
  EXPECT_EQ(users.value, "users");
  EXPECT_FALSE(users.wildcard);
  EXPECT_EQ(users.stat_name, "database_users");
  ASSERT_TRUE(users.rate_limit.has_value());
  EXPECT_EQ(users.rate_limit->name, "users_db");
  EXPECT_EQ(users.rate_limit->unit, Unit::kSecond);
  EXPECT_EQ(users.rate_limit->requests_per_unit, 500u);
  ASSERT_TRUE(users.rate_limit->limit.has_value());
  EXPECT_EQ(users.rate_limit->limit->algorithm(), Algorithm::kFixedWindow) << "the default";
  EXPECT_EQ(users.rate_limit->limit->limit(), 500);
  EXPECT_EQ(users.rate_limit->limit->period(), kMicrosPerSecond);
  EXPECT_FALSE(users.shadow_mode);
  EXPECT_FALSE(users.detailed_metric);

  const DescriptorRule& logs = rules.descriptors[1];
  EXPECT_EQ(logs.value, "logs") << "the prefix, without '*'";
  EXPECT_TRUE(logs.wildcard);
  EXPECT_EQ(logs.stat_name, "database_logs*");
  EXPECT_TRUE(logs.shadow_mode);
  EXPECT_TRUE(logs.detailed_metric);
  ASSERT_TRUE(logs.rate_limit && logs.rate_limit->limit);
  EXPECT_EQ(logs.rate_limit->unit, Unit::kMinute) << "unit names are case-insensitive";
  EXPECT_EQ(logs.rate_limit->limit->algorithm(), Algorithm::kGcra);
  EXPECT_EQ(logs.rate_limit->limit->burst(), 3);
  EXPECT_EQ(logs.rate_limit->limit->period(), kMicrosPerMinute);
  EXPECT_EQ(logs.rate_limit->replaces, std::vector<std::string>{"users_db"});

  const DescriptorRule& ldap = rules.descriptors[2];
  EXPECT_EQ(ldap.stat_name, "ldap");
  ASSERT_TRUE(ldap.rate_limit.has_value());
  EXPECT_TRUE(ldap.rate_limit->unlimited);
  EXPECT_FALSE(ldap.rate_limit->limit.has_value());

  const DescriptorRule& blocked = rules.descriptors[3];
  ASSERT_TRUE(blocked.rate_limit.has_value());
  EXPECT_FALSE(blocked.rate_limit->unlimited);
  EXPECT_EQ(blocked.rate_limit->requests_per_unit, 0u);
  EXPECT_EQ(blocked.rate_limit->unit, Unit::kHour);
  EXPECT_FALSE(blocked.rate_limit->limit.has_value()) << "0: every request over the limit";

  const DescriptorRule& tenant = rules.descriptors[4];
  EXPECT_FALSE(tenant.rate_limit.has_value());
  ASSERT_EQ(tenant.descriptors.size(), 2u);
  const DescriptorRule& user = tenant.descriptors[0];
  ASSERT_TRUE(user.rate_limit && user.rate_limit->limit);
  EXPECT_EQ(user.rate_limit->unit, Unit::kUnknown) << "5m is no unit";
  EXPECT_EQ(user.rate_limit->limit->period(), 5 * kMicrosPerMinute);
  EXPECT_EQ(user.rate_limit->limit->algorithm(), Algorithm::kTokenBucket);
  const DescriptorRule& bot = tenant.descriptors[1];
  ASSERT_TRUE(bot.rate_limit && bot.rate_limit->limit);
  EXPECT_EQ(bot.rate_limit->unit, Unit::kDay) << "a period of exactly one unit is that unit";
}

TEST(RlsConfig, AcceptsEachOfTheFiveAlgorithms) {
  for (Algorithm algorithm : kAlgorithms) {
    const std::string name(algorithm_name(algorithm));
    SCOPED_TRACE(name);
    const DomainRules rules = parse_ok(
        "domain: cfg_alg\ndescriptors:\n  - key: k\n"
        "    rate_limit:\n      unit: minute\n"
        "      requests_per_unit: 6\n      algorithm: " +
        name + "\n");
    ASSERT_EQ(rules.descriptors.size(), 1u);
    ASSERT_TRUE(rules.descriptors[0].rate_limit && rules.descriptors[0].rate_limit->limit);
    EXPECT_EQ(rules.descriptors[0].rate_limit->limit->algorithm(), algorithm);
  }
}

TEST(RlsConfig, EveryUnitHasItsLength) {
  EXPECT_EQ(unit_length(Unit::kSecond), kMicrosPerSecond);
  EXPECT_EQ(unit_length(Unit::kMinute), kMicrosPerMinute);
  EXPECT_EQ(unit_length(Unit::kHour), kMicrosPerHour);
  EXPECT_EQ(unit_length(Unit::kDay), kMicrosPerDay);
  EXPECT_EQ(unit_length(Unit::kWeek), 7 * kMicrosPerDay);
  EXPECT_EQ(unit_length(Unit::kMonth), 30 * kMicrosPerDay);
  EXPECT_EQ(unit_length(Unit::kYear), 365 * kMicrosPerDay);
  EXPECT_EQ(unit_length(Unit::kUnknown), 0);
  EXPECT_EQ(unit_name(Unit::kWeek), "week");
  EXPECT_EQ(unit_name(Unit::kMonth), "month");
  EXPECT_EQ(unit_name(Unit::kUnknown), "unknown");
  EXPECT_EQ(unit_of_period(kMicrosPerHour), Unit::kHour);
  EXPECT_EQ(unit_of_period(365 * kMicrosPerDay), Unit::kYear);
  EXPECT_EQ(unit_of_period(2 * kMicrosPerSecond), Unit::kUnknown);
  // Envoy's numbers for the units.
  EXPECT_EQ(static_cast<int>(Unit::kSecond), 1);
  EXPECT_EQ(static_cast<int>(Unit::kYear), 6);
  EXPECT_EQ(static_cast<int>(Unit::kWeek), 7);
  for (Unit unit : {Unit::kSecond, Unit::kMinute, Unit::kHour, Unit::kDay, Unit::kWeek,
                    Unit::kMonth, Unit::kYear}) {
    EXPECT_EQ(unit_of_period(unit_length(unit)), unit) << unit_name(unit);
  }
}

TEST(RlsConfig, ErrorsNameTheLineAndTheField) {
  const std::string unknown_unit = parse_error(
      "domain: cfg_err\ndescriptors:\n  - key: k\n    rate_limit:\n"
      "      requests_per_unit: 5\n      unit: fortnight\n");
  EXPECT_EQ(unknown_unit.find("line 6: descriptors[0].rate_limit.unit: unknown unit"), 0u)
      << unknown_unit;
  EXPECT_NE(unknown_unit.find("fortnight"), std::string::npos) << unknown_unit;

  const std::string unknown_field = parse_error(
      "domain: cfg_err\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n"
      "      requests_per_unit: 5\n      request_per_unit: 6\n");
  EXPECT_NE(unknown_field.find("line 7:"), std::string::npos) << unknown_field;
  EXPECT_NE(unknown_field.find("descriptors[0].rate_limit.request_per_unit"), std::string::npos)
      << unknown_field;
  EXPECT_NE(unknown_field.find("unknown field (expected"), std::string::npos) << unknown_field;

  const std::string nested = parse_error(
      "domain: cfg_err\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n"
      "        valeu: x\n");
  EXPECT_NE(nested.find("line 6: descriptors[0].descriptors[0].valeu: unknown field"),
            std::string::npos)
      << nested;

  const std::string top = parse_error("domain: cfg_err\ndescriptor: []\n");
  EXPECT_NE(top.find("line 2:"), std::string::npos) << top;
  EXPECT_NE(top.find("unknown field"), std::string::npos) << top;
}

TEST(RlsConfig, RejectsWhatItCannotDecide) {
  struct Case {
    std::string_view name;
    std::string text;
    std::string_view expect;
  };
  const std::string head = "domain: cfg_bad\ndescriptors:\n  - key: k\n    rate_limit:\n";
  const std::vector<Case> cases = {
      {"both unit and period",
       head + "      unit: second\n      period: 1s\n"
              "      requests_per_unit: 1\n",
       "unit or period"},
      {"neither unit nor period", head + "      requests_per_unit: 1\n", "needs a unit"},
      {"a concurrency limit",
       head + "      unit: second\n      requests_per_unit: 5\n      algorithm: concurrency\n",
       "Envoy's rate limit service has no release step"},
      {"no requests_per_unit", head + "      unit: second\n", "requests_per_unit"},
      {"negative requests", head + "      unit: second\n      requests_per_unit: -1\n",
       "requests_per_unit"},
      {"burst on fixed_window",
       head + "      unit: second\n      requests_per_unit: 5\n"
              "      burst: 9\n",
       "burst applies only to token_bucket and gcra"},
      {"burst with zero requests",
       head + "      unit: second\n      requests_per_unit: 0\n"
              "      algorithm: gcra\n      burst: 2\n",
       "burst"},
      {"unknown algorithm",
       head + "      unit: second\n      requests_per_unit: 5\n"
              "      algorithm: leaky\n",
       "algorithm"},
      {"unlimited with a unit", head + "      unlimited: true\n      unit: second\n", "unlimited"},
      {"bad boolean", head + "      unlimited: maybe\n", "true or false"},
      {"bad period", head + "      period: soon\n      requests_per_unit: 1\n", "period"},
      {"replaces not a list",
       head + "      unit: second\n      requests_per_unit: 1\n"
              "      replaces: users_db\n",
       "replaces"},
      {"replaces empty name",
       head + "      unit: second\n      requests_per_unit: 1\n"
              "      replaces:\n        - name: \"\"\n",
       "must not be empty"},
      {"empty key", "domain: cfg_bad\ndescriptors:\n  - key: \"\"\n", "key: must not be empty"},
      {"no key", "domain: cfg_bad\ndescriptors:\n  - value: v\n", "key"},
      {"no domain", "descriptors: []\n", "domain"},
      {"empty domain", "domain: \"\"\n", "must not be empty"},
      {"not a mapping", "- a\n- b\n", "mapping"},
      {"descriptors not a list", "domain: cfg_bad\ndescriptors: 5\n", "list"},
      {"two documents", "domain: a\n---\ndomain: b\n", "line 2: a rules file holds one"},
      {"duplicate descriptor",
       "domain: cfg_bad\ndescriptors:\n  - key: k\n    value: v\n"
       "  - key: k\n    value: v\n",
       "duplicate descriptor"},
      {"bad yaml", "domain: [\n", "line"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name));
    const std::string message = parse_error(c.text);
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
    EXPECT_EQ(message.rfind("line ", 0), 0u) << "errors start with the line: " << message;
  }
}

// The config's booleans (src/config/yaml_fields.h): YAML 1.2 core schema's case rule.
TEST(RlsConfig, BooleansAreLowerCapitalisedOrUpperCase) {
  for (const auto& [word, value] : std::vector<std::pair<std::string, bool>>{{"true", true},
                                                                             {"True", true},
                                                                             {"TRUE", true},
                                                                             {"Yes", true},
                                                                             {"ON", true},
                                                                             {"false", false},
                                                                             {"False", false},
                                                                             {"FALSE", false},
                                                                             {"No", false},
                                                                             {"OFF", false}}) {
    const DomainRules rules =
        parse_ok("domain: cfg_bool\ndescriptors:\n  - key: k\n    shadow_mode: " + word +
                 "\n    detailed_metric: " + word + "\n");
    ASSERT_EQ(rules.descriptors.size(), 1u) << word;
    EXPECT_EQ(rules.descriptors[0].shadow_mode, value) << word;
    EXPECT_EQ(rules.descriptors[0].detailed_metric, value) << word;
  }
  for (const char* word : {"tRUE", "TrUe", "fALSE", "yES", "oN"}) {
    const std::string message = parse_error(
        std::string("domain: cfg_bool\ndescriptors:\n  - key: k\n    shadow_mode: ") + word + "\n");
    EXPECT_EQ(message, "line 4: descriptors[0].shadow_mode: \"" + std::string(word) +
                           "\" must be true or false (or yes/no, on/off)");
  }
}

TEST(RlsConfig, ChargeAfterResponseIsParsedAndOnRequestIsTheDefault) {
  const DomainRules rules = parse_ok(
      "domain: cfg_charge\ndescriptors:\n"
      "  - key: tokens\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10000\n"
      "      charge: after_response\n"
      "  - key: requests\n    rate_limit:\n      unit: minute\n      requests_per_unit: 60\n"
      "      charge: on_request\n"
      "  - key: plain\n    rate_limit: {unit: minute, requests_per_unit: 60}\n"
      "  - key: tenant\n    descriptors:\n      - key: model\n"
      "        rate_limit: {period: 1h, requests_per_unit: 5, algorithm: gcra, burst: 9,"
      " charge: after_response}\n");
  ASSERT_EQ(rules.descriptors.size(), 4u);
  const DescriptorRule& tokens = rules.descriptors[0];
  ASSERT_TRUE(tokens.rate_limit && tokens.rate_limit->limit);
  EXPECT_TRUE(tokens.rate_limit->charge_after_response);
  EXPECT_EQ(tokens.rate_limit->requests_per_unit, 10'000u);
  EXPECT_EQ(tokens.rate_limit->limit->limit(), 10'000) << "the limit as without charge";
  EXPECT_EQ(tokens.rate_limit->limit->algorithm(), Algorithm::kFixedWindow);
  const DescriptorRule& requests = rules.descriptors[1];
  ASSERT_TRUE(requests.rate_limit && requests.rate_limit->limit);
  EXPECT_FALSE(requests.rate_limit->charge_after_response);
  ASSERT_TRUE(rules.descriptors[2].rate_limit.has_value());
  EXPECT_FALSE(rules.descriptors[2].rate_limit->charge_after_response) << "the default";
  ASSERT_EQ(rules.descriptors[3].descriptors.size(), 1u);
  const DescriptorRule& model = rules.descriptors[3].descriptors[0];
  ASSERT_TRUE(model.rate_limit && model.rate_limit->limit);
  EXPECT_TRUE(model.rate_limit->charge_after_response);
  EXPECT_EQ(model.rate_limit->limit->algorithm(), Algorithm::kGcra);
  EXPECT_EQ(model.rate_limit->limit->burst(), 9);
  // Unset on every rule of kFull, which gives no charge.
  const DomainRules full = parse_ok(kFull);
  for (const DescriptorRule& rule : full.descriptors) {
    if (rule.rate_limit) {
      EXPECT_FALSE(rule.rate_limit->charge_after_response) << rule.stat_name;
    }
  }
}

TEST(RlsConfig, ChargeErrorsNameTheLineAndTheField) {
  const std::string head = "domain: cfg_charge_err\ndescriptors:\n  - key: k\n    rate_limit:\n";
  const std::string unknown = parse_error(head +
                                          "      unit: minute\n      requests_per_unit: 5\n"
                                          "      charge: later\n");
  EXPECT_EQ(unknown.find("line 7: descriptors[0].rate_limit.charge: unknown charge"), 0u)
      << unknown;
  EXPECT_NE(unknown.find("later"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("on_request or after_response"), std::string::npos) << unknown;

  const std::string not_text =
      parse_error(head + "      unit: minute\n      requests_per_unit: 5\n      charge: [a]\n");
  EXPECT_EQ(not_text.find("line 7: descriptors[0].rate_limit.charge: must be a charge mode"), 0u)
      << not_text;

  for (const char* mode : {"after_response", "on_request"}) {
    SCOPED_TRACE(mode);
    const std::string unlimited =
        parse_error(head + "      unlimited: true\n      charge: " + mode + "\n");
    EXPECT_EQ(unlimited.find("line 6: descriptors[0].rate_limit.charge: must not be given with "
                             "unlimited: true"),
              0u)
        << unlimited;
  }

  const std::string blocked = parse_error(head +
                                          "      unit: minute\n      requests_per_unit: 0\n"
                                          "      charge: after_response\n");
  EXPECT_EQ(blocked.find("line 7: descriptors[0].rate_limit.charge: needs requests_per_unit > 0"),
            0u)
      << blocked;
  // on_request with requests_per_unit 0 is what it always was: every request over the limit.
  const DomainRules zero = parse_ok(head +
                                    "      unit: minute\n      requests_per_unit: 0\n"
                                    "      charge: on_request\n");
  ASSERT_EQ(zero.descriptors.size(), 1u);
  ASSERT_TRUE(zero.descriptors[0].rate_limit.has_value());
  EXPECT_FALSE(zero.descriptors[0].rate_limit->limit.has_value());
}

TEST(RlsConfig, AllowsWhatEnvoyAllows) {
  // The same key with a value, a wildcard and no value are three rules; a domain without
  // descriptors is valid.
  const DomainRules rules = parse_ok(
      "domain: cfg_ok\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v*\n"
      "  - key: k\n");
  EXPECT_EQ(rules.descriptors.size(), 3u);
  EXPECT_TRUE(parse_ok("domain: cfg_empty\n").descriptors.empty());
  EXPECT_TRUE(parse_ok("domain: cfg_null\ndescriptors:\n").descriptors.empty());
  // Comments and quoted numbers as values.
  const DomainRules quoted = parse_ok(
      "# rules\ndomain: cfg_q\ndescriptors:\n  - key: code\n    value: \"404\"\n"
      "    rate_limit: {unit: second, requests_per_unit: 4294967295}\n");
  ASSERT_EQ(quoted.descriptors.size(), 1u);
  EXPECT_EQ(quoted.descriptors[0].value, "404");
  EXPECT_EQ(quoted.descriptors[0].rate_limit->requests_per_unit, 4294967295u);
}

TEST(RlsConfig, LoadsOneFile) {
  const std::string dir = make_temp_dir("rls_cfg_one");
  const std::string file = dir + "/rules.yaml";
  write_file(file, domain_yaml("cfg_one"));
  Result<RlsRules> rules = load_rls_rules(file);
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  ASSERT_EQ(rules->domains.size(), 1u);
  EXPECT_EQ(rules->domains.begin()->first, "cfg_one");
  EXPECT_EQ(rules->domains.begin()->second.source, file);
  EXPECT_EQ(rules->files, std::vector<std::string>{file});
  fs::remove_all(dir);
}

TEST(RlsConfig, LoadsADirectorySkippingHiddenAndOtherFilesFollowingSymlinks) {
  const std::string dir = make_temp_dir("rls_cfg_dir");
  const std::string elsewhere = make_temp_dir("rls_cfg_elsewhere");
  write_file(dir + "/b.yaml", domain_yaml("cfg_b"));
  write_file(dir + "/a.yml", domain_yaml("cfg_a"));
  write_file(dir + "/.hidden.yaml", "this: [is not valid");
  write_file(dir + "/notes.txt", "not: rules");
  write_file(dir + "/README", "domain: cfg_readme\n");
  fs::create_directory(dir + "/sub.yaml");  // a directory, not a file
  write_file(dir + "/sub.yaml/inner.yaml", domain_yaml("cfg_inner"));
  write_file(elsewhere + "/target.yaml", domain_yaml("cfg_linked"));
  fs::create_symlink(elsewhere + "/target.yaml", dir + "/c.yaml");

  Result<RlsRules> rules = load_rls_rules(dir);
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  EXPECT_EQ(rules->domains.size(), 3u);
  EXPECT_TRUE(rules->domains.contains("cfg_a"));
  EXPECT_TRUE(rules->domains.contains("cfg_b"));
  EXPECT_TRUE(rules->domains.contains("cfg_linked")) << "symlinks are followed";
  EXPECT_EQ(rules->files,
            (std::vector<std::string>{dir + "/a.yml", dir + "/b.yaml", dir + "/c.yaml"}))
      << "in name order";
  fs::remove_all(dir);
  fs::remove_all(elsewhere);
}

TEST(RlsConfig, ADomainMayBeDefinedOnce) {
  const std::string dir = make_temp_dir("rls_cfg_dup");
  write_file(dir + "/one.yaml", domain_yaml("cfg_dup"));
  write_file(dir + "/two.yaml", domain_yaml("cfg_dup", 9));
  Result<RlsRules> rules = load_rls_rules(dir);
  ASSERT_FALSE(rules.has_value());
  EXPECT_EQ(rules.error().code, Errc::kInvalidArgument);
  const std::string& message = rules.error().message;
  EXPECT_EQ(message.rfind(dir + "/two.yaml: ", 0), 0u) << message;
  EXPECT_NE(message.find("cfg_dup"), std::string::npos) << message;
  EXPECT_NE(message.find(dir + "/one.yaml"), std::string::npos) << message;
  fs::remove_all(dir);
}

TEST(RlsConfig, FileErrorsStartWithThePath) {
  const std::string dir = make_temp_dir("rls_cfg_err");
  write_file(dir + "/good.yaml", domain_yaml("cfg_good"));
  write_file(dir + "/bad.yaml",
             "domain: cfg_bad\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: moon\n"
             "      requests_per_unit: 1\n");
  Result<RlsRules> rules = load_rls_rules(dir);
  ASSERT_FALSE(rules.has_value());
  EXPECT_EQ(
      rules.error().message.rfind(dir + "/bad.yaml: line 5: descriptors[0].rate_limit.unit", 0), 0u)
      << rules.error().message;

  Result<RlsRules> missing = load_rls_rules(dir + "/nothing.yaml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("nothing.yaml"), std::string::npos);
  fs::remove_all(dir);
}

TEST(RlsConfig, AnEmptyDirectoryLoadsNoDomains) {
  const std::string dir = make_temp_dir("rls_cfg_empty");
  Result<RlsRules> rules = load_rls_rules(dir);
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  EXPECT_TRUE(rules->domains.empty());
  fs::remove_all(dir);
}

TEST(RlsConfig, TheFingerprintChangesWithAnEditAFileAndASymlinkSwap) {
  const std::string dir = make_temp_dir("rls_cfg_fp");
  write_file(dir + "/v1.txt", domain_yaml("cfg_fp"));
  write_file(dir + "/v2.txt", domain_yaml("cfg_fp", 6));
  fs::create_symlink(dir + "/v1.txt", dir + "/rules.yaml");
  const std::string first = rls_rules_fingerprint(dir);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(rls_rules_fingerprint(dir), first) << "stable while nothing changes";

  fs::create_symlink(dir + "/v2.txt", dir + "/.tmp-link");
  fs::rename(dir + "/.tmp-link", dir + "/rules.yaml");
  const std::string swapped = rls_rules_fingerprint(dir);
  EXPECT_NE(swapped, first);

  write_file(dir + "/extra.yml", domain_yaml("cfg_fp2"));
  const std::string added = rls_rules_fingerprint(dir);
  EXPECT_NE(added, swapped);

  write_file(dir + "/extra.yml", domain_yaml("cfg_fp3"));  // the same size, other content
  EXPECT_NE(rls_rules_fingerprint(dir), added);

  write_file(dir + "/.ignored.yaml", "anything");
  EXPECT_EQ(rls_rules_fingerprint(dir), rls_rules_fingerprint(dir));
  const std::string before_hidden = rls_rules_fingerprint(dir);
  write_file(dir + "/.ignored.yaml", "anything else");
  EXPECT_EQ(rls_rules_fingerprint(dir), before_hidden) << "hidden files are not rules";

  EXPECT_EQ(rls_rules_fingerprint(dir + "/missing"), "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spillway::rls
