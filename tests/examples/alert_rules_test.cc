// examples/prometheus/spillway-alerts.yml passes `promtool check rules` and its own unit tests
// (`promtool test rules spillway-alerts.test.yml`: each alert fires on a failing instance and not
// on a healthy one), every alert has a test in which it fires, and the unit tests are sharp
// enough to catch a rule loosened or tightened by mistake (each mutation below must fail them).
// promtool comes with Debian's prometheus package (scripts/setup.sh); without it the tests fail.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace spillway {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(SPILLWAY_SOURCE_DIR) / "examples/prometheus";
const fs::path kRules = kDir / "spillway-alerts.yml";
const fs::path kTests = kDir / "spillway-alerts.test.yml";

// promtool's path, or "" (the caller fails the test).
std::string promtool() {
  const testing::CommandResult found = testing::run_command("command -v promtool");
  std::string path = found.out.substr(0, found.out.find('\n'));
  return found.status == 0 ? path : "";
}

std::vector<std::string> alert_names(const std::string& rules) {
  std::vector<std::string> names;
  const std::regex alert(R"(- alert: (\w+))");
  for (std::sregex_iterator it(rules.begin(), rules.end(), alert), end; it != end; ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

TEST(AlertRules, PromtoolChecksTheRules) {
  const std::string tool = promtool();
  ASSERT_FALSE(tool.empty())
      << "promtool not found: install Debian's prometheus (scripts/setup.sh)";
  const testing::CommandResult run =
      testing::run_command("'" + tool + "' check rules '" + kRules.string() + "' 2>&1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("SUCCESS: 7 rules found"), std::string::npos) << run.out;
}

TEST(AlertRules, TheUnitTestsPass) {
  const std::string tool = promtool();
  ASSERT_FALSE(tool.empty())
      << "promtool not found: install Debian's prometheus (scripts/setup.sh)";
  const testing::CommandResult run = testing::run_command(
      "cd '" + kDir.string() + "' && '" + tool + "' test rules spillway-alerts.test.yml 2>&1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("SUCCESS"), std::string::npos) << run.out;
}

TEST(AlertRules, EveryAlertFiresInSomeTestAndIsQuietInTheHealthyOne) {
  const std::vector<std::string> names = alert_names(testing::read_file(kRules.string()));
  ASSERT_EQ(names.size(), 7u);
  const std::string tests = testing::read_file(kTests.string());
  for (const std::string& name : names) {
    const std::regex fires("alertname: " + name + R"(\s+exp_alerts:\s+- exp_labels:)");
    EXPECT_TRUE(std::regex_search(tests, fires)) << name << " never fires in a test";
    const std::regex quiet("alertname: " + name + R"(, exp_alerts: \[\]\})");
    EXPECT_TRUE(std::regex_search(tests, quiet)) << name << " not in the healthy test";
  }
}

// A copy of the rules with `from` replaced by `to` (every occurrence, at least one) must fail
// the unit tests.
void expect_mutation_caught(const std::string& tool, const std::string& from,
                            const std::string& to) {
  SCOPED_TRACE(from + " -> " + to);
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("alert_mutation_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string rules = testing::read_file(kRules.string());
  std::size_t replaced = 0;
  for (std::size_t at = rules.find(from); at != std::string::npos;
       at = rules.find(from, at + to.size())) {
    rules.replace(at, from.size(), to);
    ++replaced;
  }
  ASSERT_GT(replaced, 0u) << "the rules no longer contain " << from;
  std::ofstream(dir / "spillway-alerts.yml") << rules;
  fs::copy_file(kTests, dir / "spillway-alerts.test.yml");
  const testing::CommandResult check = testing::run_command(
      "cd '" + dir.string() + "' && '" + tool + "' check rules spillway-alerts.yml 2>&1");
  EXPECT_EQ(check.status, 0) << "the mutation must still be valid rules: " << check.out;
  const testing::CommandResult run = testing::run_command(
      "cd '" + dir.string() + "' && '" + tool + "' test rules spillway-alerts.test.yml 2>&1");
  EXPECT_NE(run.status, 0) << "the unit tests did not notice:\n" << run.out;
  fs::remove_all(dir);
}

TEST(AlertRules, TheUnitTestsCatchALoosenedOrTightenedRule) {
  const std::string tool = promtool();
  ASSERT_FALSE(tool.empty())
      << "promtool not found: install Debian's prometheus (scripts/setup.sh)";
  // An open circuit no longer pages.
  expect_mutation_caught(tool, "unreachable|circuit_open|local_fallback", "unreachable");
  // /readyz's 503 (its job while the backend is down) pages.
  expect_mutation_caught(tool, "endpoint!=\"/readyz\"", "endpoint!=\"/nothing\"");
  // Enforced denials counted as shadow ones.
  expect_mutation_caught(tool, "result=\"shadow_denied\"}[10m]", "result=~\".*denied\"}[10m]");
  // A threshold so high that 10% of backend errors pass unnoticed.
  expect_mutation_caught(tool, "> 0.01 * sum by (job, instance) (rate(spillway_requests_total",
                         "> 0.5 * sum by (job, instance) (rate(spillway_requests_total");
  // Client errors (INVALID_ARGUMENT) page as service errors.
  expect_mutation_caught(tool, "code=~\"UNAVAILABLE|", "code!~\"OK|");
  // The process being down pages at once, before its `for`.
  expect_mutation_caught(tool, "for: 2m", "for: 0m");
}

}  // namespace
}  // namespace spillway
