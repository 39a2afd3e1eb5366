// spillway simulate: a generated pattern without --rate offers traffic relative to the limit
// (each key at twice the limit; `attack`'s normal keys at half of it, so that only the attacker
// goes over), an explicit --rate still wins, and the report's notes name the key each algorithm
// denied most (in the `attack` pattern, "attacker").
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/cli/simulate_report.h"
#include "src/cli/simulation.h"
#include "src/cli/traffic_pattern.h"
#include "tests/support/process.h"

namespace spillway::cli {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/simulate_defaults_" + std::to_string(getpid()) + "_" + name;
}

// Lines of a --trace-out file that are requests (not the "#" header), by key.
struct TraceCounts {
  std::string header;
  int total = 0, attacker = 0;
};
TraceCounts count_trace(const std::string& path) {
  TraceCounts counts;
  const std::string text = testing::read_file(path);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line.starts_with("#")) {
      counts.header = line;
    } else if (!line.empty()) {
      ++counts.total;
      counts.attacker += line.find(",attacker,") != std::string::npos;
    }
  }
  return counts;
}

// Poisson counts: within 5 standard deviations of `expected`.
void expect_about(int actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 5 * std::sqrt(expected)) << what;
}

TEST(SimulateDefaults, DefaultRateFromThePatternAndTheLimit) {
  EXPECT_DOUBLE_EQ(default_rate({.name = "steady", .keys = 4, .limit_per_second = 5}), 40.0);
  EXPECT_DOUBLE_EQ(default_rate({.name = "burst", .keys = 10, .limit_per_second = 0.1}), 2.0);
  EXPECT_DOUBLE_EQ(default_rate({.name = "attack", .keys = 4, .limit_per_second = 5}), 10.0);
}

TEST(SimulateDefaults, WithoutRateEachKeyOffersTwiceTheLimit) {
  const std::string trace = temp_path("steady.csv");
  const testing::BinaryRun run = testing::run_binary(
      "simulate --pattern steady --limit 5 --period 1s --keys 4 --duration 10s --trace-out " +
      trace);
  ASSERT_EQ(run.status, 0) << run.err;
  const TraceCounts counts = count_trace(trace);
  EXPECT_NE(counts.header.find("pattern steady: 40/s for 10s, 4 keys"), std::string::npos)
      << counts.header;
  expect_about(counts.total, 2 * 5 * 4 * 10, "4 keys at 2 × 5/s for 10 s");
  std::remove(trace.c_str());
}

TEST(SimulateDefaults, AnExplicitRateWins) {
  const std::string trace = temp_path("explicit.csv");
  const testing::BinaryRun run = testing::run_binary(
      "simulate --pattern steady --rate 7 --limit 5 --period 1s --keys 4 --duration 10s "
      "--trace-out " +
      trace);
  ASSERT_EQ(run.status, 0) << run.err;
  const TraceCounts counts = count_trace(trace);
  EXPECT_NE(counts.header.find("pattern steady: 7/s for 10s"), std::string::npos) << counts.header;
  expect_about(counts.total, 70, "7/s for 10 s");
  std::remove(trace.c_str());
}

TEST(SimulateDefaults, AttackWithoutRateKeepsTheNormalKeysUnderTheLimit) {
  const std::string trace = temp_path("attack.csv");
  const std::string report = temp_path("attack.html");
  const testing::BinaryRun run = testing::run_binary(
      "simulate --pattern attack --limit 5 --period 1s --keys 4 --duration 20s "
      "--algorithms sliding_log,gcra --trace-out " +
      trace + " --out " + report);
  ASSERT_EQ(run.status, 0) << run.err;
  const TraceCounts counts = count_trace(trace);
  expect_about(counts.attacker, 20 * 5 * 20, "the attacker at 20 × 5/s");
  expect_about(counts.total - counts.attacker, 0.5 * 5 * 4 * 20, "4 keys at half of 5/s");

  // The notes name the attacker as the key each algorithm denied most.
  const std::string html = testing::read_file(report);
  for (const char* algorithm : {"sliding_log", "gcra"}) {
    const std::string note = std::string("<li data-most-denied=\"") + algorithm + "\">" +
                             algorithm + " denied key <code>attacker</code> most: ";
    EXPECT_NE(html.find(note), std::string::npos) << algorithm;
  }
  std::remove(trace.c_str());
  std::remove(report.c_str());
}

TEST(SimulateDefaults, TheMostDeniedKeyAndItsCounts) {
  // Limit 2 per second: "a" sends 5 in one second (3 denied), "b" sends 3 (1 denied), "c" 1.
  std::vector<TraceLine> trace;
  for (int i = 0; i < 5; ++i) trace.push_back({.at = i * 1000, .key = "a", .cost = 1});
  for (int i = 0; i < 3; ++i) trace.push_back({.at = 10 + i * 1000, .key = "b", .cost = 1});
  trace.push_back({.at = 20, .key = "c", .cost = 1});
  std::stable_sort(trace.begin(), trace.end(),
                   [](const TraceLine& x, const TraceLine& y) { return x.at < y.at; });
  Result<Simulation> simulation = simulate(
      trace, {.limit = 2, .period = kMicrosPerSecond, .algorithms = {Algorithm::kSlidingLog}});
  ASSERT_TRUE(simulation.has_value()) << simulation.error().message;
  const AlgorithmOutcome& o = simulation->outcomes.at(0);
  EXPECT_EQ(o.most_denied_key, "a");
  EXPECT_EQ(o.most_denied_key_offered, 5);
  EXPECT_EQ(o.most_denied_key_denied, 3);
  const std::string html =
      report_html(*simulation, {.limit = 2, .period = kMicrosPerSecond}, "trace <b>t.csv</b>");
  EXPECT_NE(html.find("sliding_log denied key <code>a</code> most: 3 of its 5 requests (60.0%), "
                      "75.0% of the 4 denials."),
            std::string::npos)
      << html;

  // Nothing denied: no such note.
  const std::vector<TraceLine> one = {{.at = 0, .key = "a", .cost = 1}};
  Result<Simulation> calm = simulate(
      one, {.limit = 2, .period = kMicrosPerSecond, .algorithms = {Algorithm::kSlidingLog}});
  ASSERT_TRUE(calm.has_value());
  EXPECT_EQ(calm->outcomes.at(0).most_denied_key, "");
  EXPECT_EQ(
      report_html(*calm, {.limit = 2, .period = kMicrosPerSecond}, "x").find("data-most-denied"),
      std::string::npos);
}

}  // namespace
}  // namespace spillway::cli
