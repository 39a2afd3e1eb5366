// Matching a request descriptor to a rule, by envoyproxy/ratelimit's order (exact value, first
// wildcard in file order, key only; no backtracking; the last entry must land on a rate_limit),
// the metrics path, and the limiter key (length-prefixed, so no two descriptors share one).
#include "src/rls/rls_match.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

namespace spillway::rls {
namespace {

DomainRules parse(std::string_view text) {
  Result<DomainRules> rules = parse_rls_yaml(text, "match.yaml");
  EXPECT_TRUE(rules.has_value()) << rules.error().message;
  return rules ? *rules : DomainRules{};
}

// The rule's name (each rule in these tests has one), or "" for no match.
std::string matched(const DomainRules& rules, std::vector<RlsEntry> entries) {
  const Match match = match_descriptor(rules, entries);
  if (match.rule == nullptr) return "";
  EXPECT_TRUE(match.rule->rate_limit.has_value());
  return match.rule->rate_limit->name;
}

std::string limit(std::string_view name) {
  return "rate_limit: {unit: second, requests_per_unit: 1, name: " + std::string(name) + "}";
}

TEST(RlsMatch, ExactValueThenFirstWildcardThenKeyOnlyWhateverTheFileOrder) {
  const DomainRules rules = parse(
      "domain: m_order\ndescriptors:\n"
      "  - key: path\n    " +
      limit("key_only") +
      "\n"
      "  - key: path\n    value: /api*\n    " +
      limit("api_wild") +
      "\n"
      "  - key: path\n    value: /a*\n    " +
      limit("a_wild") +
      "\n"
      "  - key: path\n    value: /api/users\n    " +
      limit("exact") + "\n");
  EXPECT_EQ(matched(rules, {{"path", "/api/users"}}), "exact");
  EXPECT_EQ(matched(rules, {{"path", "/api/orders"}}), "api_wild")
      << "the first wildcard in file order, not the longest";
  EXPECT_EQ(matched(rules, {{"path", "/admin"}}), "a_wild");
  EXPECT_EQ(matched(rules, {{"path", "/b"}}), "key_only");
  EXPECT_EQ(matched(rules, {{"path", ""}}), "key_only");
  EXPECT_EQ(matched(rules, {{"other", "/api/users"}}), "") << "the key must match";

  const DomainRules first = parse(
      "domain: m_first\ndescriptors:\n"
      "  - key: path\n    value: /a*\n    " +
      limit("a_wild") +
      "\n"
      "  - key: path\n    value: /api*\n    " +
      limit("api_wild") + "\n");
  EXPECT_EQ(matched(first, {{"path", "/api/orders"}}), "a_wild");
}

TEST(RlsMatch, AStarAloneMatchesEveryValueAndAPrefixIsCaseSensitive) {
  const DomainRules rules = parse(
      "domain: m_star\ndescriptors:\n"
      "  - key: user\n    value: Bob*\n    " +
      limit("bob") +
      "\n"
      "  - key: user\n    value: \"*\"\n    " +
      limit("any") + "\n");
  EXPECT_EQ(matched(rules, {{"user", "Bobby"}}), "bob");
  EXPECT_EQ(matched(rules, {{"user", "Bob"}}), "bob") << "the prefix itself matches";
  EXPECT_EQ(matched(rules, {{"user", "bobby"}}), "any");
  EXPECT_EQ(matched(rules, {{"user", ""}}), "any");
}

TEST(RlsMatch, NestedRulesNeedEveryLevelAndDoNotBacktrack) {
  const DomainRules rules = parse(
      "domain: m_nested\ndescriptors:\n"
      "  - key: tier\n    value: gold\n    descriptors:\n"
      "      - key: user\n        value: alice\n        " +
      limit("gold_alice") +
      "\n"
      "  - key: tier\n    " +
      limit("tier_any") +
      "\n    descriptors:\n"
      "      - key: user\n        " +
      limit("tier_user") +
      "\n"
      "      - key: user\n        value: bob\n        descriptors:\n"
      "          - key: op\n            " +
      limit("tier_bob_op") + "\n");
  EXPECT_EQ(matched(rules, {{"tier", "gold"}, {"user", "alice"}}), "gold_alice");
  EXPECT_EQ(matched(rules, {{"tier", "gold"}, {"user", "carol"}}), "")
      << "(tier, gold) matched exactly; its children have no carol; no going back to tier";
  EXPECT_EQ(matched(rules, {{"tier", "silver"}, {"user", "carol"}}), "tier_user");
  EXPECT_EQ(matched(rules, {{"tier", "silver"}}), "tier_any");
  EXPECT_EQ(matched(rules, {{"tier", "gold"}}), "")
      << "(tier, gold) has no rate_limit and the key-only rule is not tried";
  EXPECT_EQ(matched(rules, {{"tier", "silver"}, {"user", "bob"}}), "")
      << "(user, bob) has no rate_limit of its own";
  EXPECT_EQ(matched(rules, {{"tier", "silver"}, {"user", "bob"}, {"op", "x"}}), "tier_bob_op");
  EXPECT_EQ(matched(rules, {{"tier", "silver"}, {"user", "carol"}, {"op", "x"}}), "")
      << "deeper than the rules";
  EXPECT_EQ(matched(rules, {{"user", "alice"}}), "") << "a nested key is not at the top";
}

TEST(RlsMatch, TheStatPathComesFromTheRulesOrTheValuesUnderDetailedMetric) {
  const DomainRules rules = parse(
      "domain: m_stats\ndescriptors:\n"
      "  - key: key1\n    value: value1\n    descriptors:\n"
      "      - key: key2\n        " +
      limit("plain") +
      "\n"
      "  - key: key3\n    value: pre*\n    " +
      limit("wild") +
      "\n"
      "  - key: key4\n    detailed_metric: true\n    " +
      limit("detailed") +
      "\n"
      "  - key: key5\n    descriptors:\n"
      "      - key: key6\n        detailed_metric: true\n        " +
      limit("nested_detailed") + "\n");
  Match plain = match_descriptor(rules, std::vector<RlsEntry>{{"key1", "value1"}, {"key2", "v"}});
  ASSERT_NE(plain.rule, nullptr);
  EXPECT_EQ(plain.stat_path, "key1_value1.key2");
  Match wild = match_descriptor(rules, std::vector<RlsEntry>{{"key3", "prefixed"}});
  ASSERT_NE(wild.rule, nullptr);
  EXPECT_EQ(wild.stat_path, "key3_pre*");
  Match detailed = match_descriptor(rules, std::vector<RlsEntry>{{"key4", "unlisted"}});
  ASSERT_NE(detailed.rule, nullptr);
  EXPECT_EQ(detailed.stat_path, "key4_unlisted");
  Match nested = match_descriptor(rules, std::vector<RlsEntry>{{"key5", "a"}, {"key6", "b"}});
  ASSERT_NE(nested.rule, nullptr);
  EXPECT_EQ(nested.stat_path, "key5_a.key6_b");
  Match none = match_descriptor(rules, std::vector<RlsEntry>{{"nope", "x"}});
  EXPECT_EQ(none.rule, nullptr);
  EXPECT_EQ(none.stat_path, "");
}

TEST(RlsMatch, NoEntriesMatchNothing) {
  const DomainRules rules =
      parse("domain: m_empty\ndescriptors:\n  - key: k\n    " + limit("k") + "\n");
  EXPECT_EQ(match_descriptor(rules, std::vector<RlsEntry>{}).rule, nullptr);
}

TEST(RlsKey, IsLengthPrefixed) {
  EXPECT_EQ(rls_key("dom", std::vector<RlsEntry>{{"k", "v"}, {"key2", ""}}),
            "/rls:3:dom:1:k:1:v:4:key2:0:");
  EXPECT_EQ(rls_key("d", std::vector<RlsEntry>{}), "/rls:1:d");
}

TEST(RlsKey, KeepsNeighboursApart) {
  // The same bytes split differently.
  const std::string a = rls_key("d", std::vector<RlsEntry>{{"a:1", "b"}});
  const std::string b = rls_key("d", std::vector<RlsEntry>{{"a", "1:b"}});
  const std::string c = rls_key("d:1:a", std::vector<RlsEntry>{{"1", "b"}});
  const std::string d = rls_key("d", std::vector<RlsEntry>{{"a", ""}, {"", "b"}});
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
  EXPECT_NE(b, d);
  EXPECT_NE(rls_key("d1", std::vector<RlsEntry>{{"k", "v"}}),
            rls_key("d", std::vector<RlsEntry>{{"1k", "v"}}));
}

RC_GTEST_PROP(RlsKeyProperty, EqualKeysOnlyForEqualDescriptors, ()) {
  // Few distinct bytes, separators among them, so that collisions would be found.
  const auto text = rc::gen::container<std::string>(rc::gen::element(':', '1', '0', 'a', '/'));
  const auto entries = rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
      rc::gen::pair(text, text));
  const std::string domain1 = *text;
  const std::string domain2 = *rc::gen::oneOf(rc::gen::just(domain1), text);
  const auto raw1 = *entries;
  const auto raw2 = *rc::gen::oneOf(rc::gen::just(raw1), entries);
  std::vector<RlsEntry> e1, e2;
  for (const auto& [k, v] : raw1) e1.push_back({k, v});
  for (const auto& [k, v] : raw2) e2.push_back({k, v});
  const bool same = domain1 == domain2 && raw1 == raw2;
  RC_ASSERT((rls_key(domain1, e1) == rls_key(domain2, e2)) == same);
}

}  // namespace
}  // namespace spillway::rls
