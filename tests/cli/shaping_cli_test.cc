// Shaping in the command line (docs/SPEC.md §2.2): replay's delay_us column, simulate's delayed
// counts, series and report, and every flag mistake named.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "src/cli/simulate_report.h"
#include "src/cli/simulation.h"
#include "tests/support/process.h"

namespace spillway::cli {
namespace {

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    rows.push_back(std::move(fields));
  }
  return rows;
}

TEST(ShapingReplay, EachLineSaysItsDelayAndTheOutputReplaysItself) {
  const std::string flags =
      "replay --algorithm gcra --limit 5 --period 1s --burst 1 --max-delay 500ms -";
  const std::string trace = "0,a\n0,a\n0,a\n0,a\n100000,a\n100000,b\n";
  testing::BinaryRun run = testing::run_binary(flags, trace);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto rows = csv_rows(run.out);
  ASSERT_EQ(rows.size(), 7u) << run.out;
  EXPECT_EQ(rows[0].back(), "delay_us");
  // allowed, delay_us: at 0 one now, then 200 and 400 ms; the fourth would wait 600 ms > 500 ms;
  // at 100 ms the next waits 500 ms; b is alone.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"1", "0"}, {"1", "200000"}, {"1", "400000"}, {"0", "0"}, {"1", "500000"}, {"1", "0"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(rows[i + 1][3], want[i].first) << i << ": " << run.out;
    EXPECT_EQ(rows[i + 1][7], want[i].second) << i << ": " << run.out;
  }
  EXPECT_EQ(rows[4][5], "100000") << "retry_after: when it would wait exactly 500 ms";
  testing::BinaryRun again = testing::run_binary(flags, run.out);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, run.out);
  // Without --max-delay, no column: the output stays what it was.
  testing::BinaryRun plain =
      testing::run_binary("replay --algorithm gcra --limit 5 --period 1s -", "0,a\n");
  EXPECT_EQ(plain.out.find("delay_us"), std::string::npos) << plain.out;
}

TEST(ShapingCliBinary, MaxDelayMistakesExitTwoNamingTheFlag) {
  struct Case {
    std::string flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"replay --algorithm fixed_window --limit 5 --period 1s --max-delay 1s -",
       "--max-delay: max_delay applies only to token_bucket and gcra, not fixed_window"},
      {"replay --algorithm gcra --limit 5 --period 1s --max-delay soon -", "--max-delay: "},
      {"replay --algorithm gcra --limit 5 --period 1s --max-delay -1s -", "--max-delay"},
      {"simulate --pattern burst --limit 5 --period 1s --max-delay 1s --algorithms "
       "gcra,sliding_window",
       "--max-delay: max_delay applies only to token_bucket and gcra, not sliding_window"},
      {"simulate --pattern burst --limit 5 --period 1s --max-delay later", "--max-delay: "},
      {"bench --algorithm sliding_log --max-delay 1s --requests 1",
       "max_delay applies only to token_bucket and gcra, not sliding_log"},
  };
  for (const Case& c : cases) {
    testing::BinaryRun run = testing::run_binary(c.flags, "0,a\n");
    EXPECT_EQ(run.status, 2) << c.flags << "\n" << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << c.flags << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.flags;
  }
}

// Ten at once against 5/s with burst 1 and 2 s of delay: all admitted, nine delayed (200 ms to
// 1.8 s, 1 s on average), and at most 5 proceed within any one second.
TEST(ShapingSimulation, DelayedRequestsAreCountedAsTheirOwnSeriesWithWhatTheyWait) {
  std::vector<TraceLine> trace;
  for (int i = 0; i < 10; ++i) trace.push_back({.at = 1'000'000, .key = "k", .cost = 1});
  SimulationSettings settings{.limit = 5,
                              .period = kMicrosPerSecond,
                              .burst = 1,
                              .max_delay = 2 * kMicrosPerSecond,
                              .algorithms = {Algorithm::kGcra, Algorithm::kTokenBucket}};
  auto result = simulate(trace, settings);
  ASSERT_TRUE(result) << result.error().message;
  for (const AlgorithmOutcome& o : result->outcomes) {
    EXPECT_EQ(o.admitted, 10);
    EXPECT_EQ(o.delayed, 9);
    EXPECT_EQ(o.delay_max, 1'800'000);
    EXPECT_EQ(o.delay_sum, 9'000'000);
    EXPECT_EQ(o.max_admitted_in_any_period, 5) << "measured when they proceed";
    ASSERT_FALSE(o.delayed_series.empty());
    EXPECT_EQ(o.delayed_series[0], 9);
  }
  const std::string summary = summary_csv(*result);
  EXPECT_NE(summary.find("max_admitted_in_any_period,delayed,mean_delay_ms,max_delay_ms\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("gcra,10,10,0,5,9,1000.000,1800.000\n"), std::string::npos) << summary;
  EXPECT_NE(series_csv(*result).find(",delayed\n"), std::string::npos);
  const std::string page = report_html(*result, settings, "ten at once");
  EXPECT_NE(page.find("data-field=\"delayed\">9<"), std::string::npos);
  EXPECT_NE(page.find("\"delayed_rate\""), std::string::npos);
  EXPECT_NE(page.find("max_delay 2s"), std::string::npos);
  // Without a delay, none of it.
  settings.max_delay = 0;
  auto plain = simulate(trace, settings);
  ASSERT_TRUE(plain);
  EXPECT_EQ(summary_csv(*plain).find("delayed"), std::string::npos);
  EXPECT_EQ(report_html(*plain, settings, "x").find("\"delayed_rate\""), std::string::npos);
}

TEST(ShapingCliBinary, WithMaxDelaySimulateComparesTheAlgorithmsThatTakeIt) {
  testing::BinaryRun run = testing::run_binary(
      "simulate --pattern burst --limit 5 --period 1s --burst 1 --max-delay 1s --duration 5s");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto rows = csv_rows(run.out);
  ASSERT_EQ(rows.size(), 3u) << run.out;
  EXPECT_EQ(rows[1][0], "token_bucket");
  EXPECT_EQ(rows[2][0], "gcra");
  // One limiter written two ways: the same counts and delays.
  EXPECT_EQ(std::vector<std::string>(rows[1].begin() + 1, rows[1].end()),
            std::vector<std::string>(rows[2].begin() + 1, rows[2].end()));
  EXPECT_GT(std::stoll(rows[1][5]), 0) << "some were delayed: " << run.out;
}

}  // namespace
}  // namespace spillway::cli
