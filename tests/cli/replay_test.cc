// spillway replay: the trace parser in-process, and the real binary on traces and bad input.
#include "src/cli/replay.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/process.h"

namespace spillway::cli {
namespace {

using Outcome = testing::BinaryRun;

Outcome run_binary(const std::string& args, const std::string& input) {
  return testing::run_binary(args, input);
}

TEST(ParseTraceLine, AcceptsTwoOrThreeFieldsAndSkipsComments) {
  auto line = parse_trace_line("  1500 , user:1 , 3 \r");
  ASSERT_TRUE(line.has_value());
  ASSERT_TRUE(line->has_value());
  EXPECT_EQ((*line)->at, 1500);
  EXPECT_EQ((*line)->key, "user:1");
  EXPECT_EQ((*line)->cost, 3);
  auto defaulted = parse_trace_line("7,k");
  ASSERT_TRUE(defaulted && *defaulted);
  EXPECT_EQ((*defaulted)->cost, 1);
  for (const char* skipped : {"", "   ", "# a comment", "  # indented"}) {
    auto parsed = parse_trace_line(skipped);
    ASSERT_TRUE(parsed.has_value()) << skipped;
    EXPECT_FALSE(parsed->has_value()) << skipped;
  }
}

TEST(ParseTraceLine, RejectsMalformedLinesNamingTheField) {
  struct Case {
    const char* line;
    const char* mentions;
  };
  for (const Case& c : {Case{"abc,k", "t_us"}, Case{"-5,k", "t_us"}, Case{"10", "1 field"},
                        Case{"10,,1", "key"}, Case{"10,k,-1", "cost"}, Case{"10,k,x", "cost"},
                        Case{"10,k,1,2", "more than 3"}, Case{"99999999999999999999,k", "t_us"}}) {
    auto parsed = parse_trace_line(c.line);
    ASSERT_FALSE(parsed.has_value()) << c.line;
    EXPECT_NE(parsed.error().message.find(c.mentions), std::string::npos)
        << c.line << " -> " << parsed.error().message;
  }
}

TEST(TraceParser, SkipsAHeaderOnTheFirstLineOnlyAndIgnoresItsExtraColumns) {
  TraceParser own;  // replay's output: a header of 7 columns
  for (const char* skipped :
       {"# a comment", "", "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us"}) {
    auto parsed = own.parse(skipped);
    ASSERT_TRUE(parsed.has_value()) << skipped << ": " << parsed.error().message;
    EXPECT_FALSE(parsed->has_value()) << skipped;
  }
  auto line = own.parse("20,a,2,0,0,980,980");
  ASSERT_TRUE(line && *line) << (line ? "skipped" : line.error().message);
  EXPECT_EQ((*line)->at, 20);
  EXPECT_EQ((*line)->key, "a");
  EXPECT_EQ((*line)->cost, 2);
  EXPECT_FALSE(own.parse("20,a,2,0,0,980,980,8").has_value()) << "8 fields under 7 columns";
  EXPECT_FALSE(own.parse("t_us,key").has_value()) << "a header after the first line";

  TraceParser plain;  // no header: 3 fields at most, as before
  ASSERT_TRUE(plain.parse("0,a,1").has_value());
  EXPECT_FALSE(plain.parse("0,a,1,1").has_value());
  TraceParser short_header;
  ASSERT_TRUE(short_header.parse(" t_us , key ").has_value());
  ASSERT_TRUE(short_header.parse("5,b").has_value());
  for (const char* wrong : {"t_us,user", "t_us", "t_us,key,weight"}) {
    TraceParser parser;
    auto parsed = parser.parse(wrong);
    ASSERT_FALSE(parsed.has_value()) << wrong;
    EXPECT_NE(parsed.error().message.find("header must start t_us,key[,cost]"), std::string::npos)
        << parsed.error().message;
  }
}

TEST(ReplayBinary, ReadsDashAsStandardInputAndReplaysItsOwnOutput) {
  const std::string flags = "replay --algorithm fixed_window --limit 2 --period 1ms";
  const std::string trace = "0,a\n10,a\n20,a\n20,b,2\n1000,a\n";
  const Outcome first = run_binary(flags, trace);
  ASSERT_EQ(first.status, 0) << first.err;
  const Outcome dash = run_binary(flags + " -", trace);
  ASSERT_EQ(dash.status, 0) << dash.err;
  EXPECT_EQ(dash.out, first.out);
  // The output, header and all, as the next run's trace: the same requests, the same answers.
  const Outcome again = run_binary(flags + " -", first.out);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(again.err, "");
  // A header that is not a trace's is an error naming it.
  const Outcome wrong = run_binary(flags + " -", "t_us,user\n0,a\n");
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.err.find("trace line 1: a header must start t_us,key[,cost]"), std::string::npos)
      << wrong.err;
}

TEST(ReplayBinary, ATraceFileThatCannotBeOpenedGivesTheReason) {
  const Outcome run =
      run_binary("replay --algorithm gcra --limit 1 --period 1s /nonexistent/trace.csv", "");
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "spillway replay: cannot open trace file \"/nonexistent/trace.csv\": No such file or "
            "directory\n");
}

TEST(ReplayBinary, PrintsHeaderAndOneDecisionPerRequest) {
  // fixed_window 2 per 1000 µs: two admitted, the third denied until the window ends at 1000.
  Outcome run = run_binary("replay --algorithm fixed_window --limit 2 --period 1ms",
                           "# comment\n0,a\n10,a\n20,a\n20,b,2\n1000,a\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us\n"
            "0,a,1,1,1,0,1000\n"
            "10,a,1,1,0,0,990\n"
            "20,a,1,0,0,980,980\n"
            "20,b,2,1,0,0,980\n"
            "1000,a,1,1,1,0,1000\n");
}

TEST(ReplayBinary, ReadsTraceFromFileArgument) {
  const std::string path =
      ::testing::TempDir() + "/trace_file_" + std::to_string(getpid()) + ".csv";
  std::ofstream(path) << "0,k\n0,k\n";
  Outcome run = run_binary("replay --algorithm gcra --limit 1 --period 1s " + path, "");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us\n"
            "0,k,1,1,0,0,1000000\n"
            "0,k,1,0,0,1000000,1000000\n");
}

TEST(ReplayBinary, BadArgumentsExitTwoWithOneLineNamingTheArgument) {
  struct Case {
    const char* args;
    const char* mentions;
  };
  for (const Case& c : {
           Case{"replay --limit 1 --period 1s", "--algorithm"},
           Case{"replay --algorithm gcra --period 1s", "--limit"},
           Case{"replay --algorithm nope --limit 1 --period 1s", "--algorithm"},
           Case{"replay --algorithm gcra --limit 0 --period 1s", "--limit"},
           Case{"replay --algorithm gcra --limit 1 --period 1x", "--period"},
           Case{"replay --algorithm gcra --limit 1 --period 1s --burst -2", "--burst"},
           Case{"replay --algorithm fixed_window --limit 1 --period 1s --burst 2", "burst"},
           Case{"replay --algorithm gcra --limit 1 --period 1s --colour red", "--colour"},
           Case{"replay --algorithm gcra --limit 1 --period 1s --backend ftp://x", "--backend"},
           Case{"replay --algorithm gcra --limit 1 --period 1s /nonexistent/trace.csv",
                "trace file"},
           Case{"frobnicate", "frobnicate"},
       }) {
    Outcome run = run_binary(c.args, "0,k\n");
    EXPECT_EQ(run.status, 2) << c.args;
    const std::string first_line = run.err.substr(0, run.err.find('\n'));
    EXPECT_NE(first_line.find(c.mentions), std::string::npos) << c.args << " -> " << run.err;
    // Replay's errors are one line; only an unknown command is followed by the usage text.
    if (std::string_view(c.args).starts_with("replay")) {
      EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << c.args << " -> " << run.err;
    }
  }
}

TEST(ReplayBinary, MalformedTraceLineNamesTheLineNumberAndFails) {
  Outcome run =
      run_binary("replay --algorithm gcra --limit 5 --period 1s", "0,a\n# fine\n5,a,zz\n9,a\n");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("line 3"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cost"), std::string::npos) << run.err;
}

TEST(ParseTraceLine, UsageColumnsReadTheActualCostAndWhenItIsKnown) {
  auto both = parse_trace_line("100,k,40,25,900", 5, true);
  ASSERT_TRUE(both && *both) << (both ? "" : both.error().message);
  EXPECT_EQ((*both)->cost, 40);
  EXPECT_EQ((*both)->actual, 25);
  EXPECT_EQ((*both)->done, 900);
  auto no_done = parse_trace_line("100,k,40,25", 5, true);
  ASSERT_TRUE(no_done && *no_done);
  EXPECT_EQ((*no_done)->done, 100);  // known at once
  auto plain = parse_trace_line("100,k,40,,", 5, true);
  ASSERT_TRUE(plain && *plain);
  EXPECT_FALSE((*plain)->actual.has_value());
  struct Case {
    const char* line;
    const char* mentions;
  };
  for (const Case& c : {Case{"100,k,4,-1", "actual"}, Case{"100,k,4,x", "actual"},
                        Case{"100,k,4,9007199254740993", "actual"}, Case{"100,k,4,1,99", "before"},
                        Case{"100,k,4,1,zz", "done_us"}, Case{"100,k,4,,200", "without an actual"},
                        Case{"100,k,4,1,200,7", "more than 5"}}) {
    auto parsed = parse_trace_line(c.line, 5, true);
    ASSERT_FALSE(parsed.has_value()) << c.line;
    EXPECT_NE(parsed.error().message.find(c.mentions), std::string::npos)
        << c.line << " -> " << parsed.error().message;
  }
}

TEST(TraceParser, AUsageHeaderTurnsTheColumnsOnAndAnotherFifthColumnIsRefused) {
  TraceParser usage;
  ASSERT_TRUE(usage.parse("t_us,key,cost,actual,done_us").has_value());
  EXPECT_TRUE(usage.usage());
  auto line = usage.parse("5,k,3,1,9");
  ASSERT_TRUE(line && *line);
  EXPECT_EQ((*line)->actual, 1);
  TraceParser replays_own_output;  // "allowed" after cost: extra columns, ignored as before
  ASSERT_TRUE(replays_own_output.parse("t_us,key,cost,allowed,remaining").has_value());
  EXPECT_FALSE(replays_own_output.usage());
  TraceParser wrong;
  auto refused = wrong.parse("t_us,key,cost,actual,finished");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("done_us"), std::string::npos) << refused.error().message;
}

TEST(ReplayBinary, UsageLinesReserveTheirCostAndCommitTheActualCostWhenDone) {
  // fixed_window 10 per second. Line 1 reserves 8 and commits 2 at 0.5 s (6 back), so line 2 at
  // 0.1 s is denied (8 + 5 > 10) and line 3 at 0.6 s admitted (2 + 5); line 4's reserve of 4 is
  // denied; line 5 reserves the last 3 and commits 6 at 0.8 s: 3 charged as debt, so line 6's
  // peek at 0.9 s is denied until the window ends. A line waits for its commit to be printed, in
  // trace order.
  Outcome run = run_binary("replay --algorithm fixed_window --limit 10 --period 1s",
                           "t_us,key,cost,actual,done_us\n"
                           "0,a,8,2,500000\n"
                           "100000,a,5,,\n"
                           "600000,a,5\n"
                           "700000,a,4,9,800000\n"
                           "700000,a,3,6,800000\n"
                           "900000,a,0\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us,actual,done_us,"
            "refunded,charged\n"
            "0,a,8,1,2,0,1000000,2,500000,6,0\n"
            "100000,a,5,0,2,900000,900000,,,,\n"
            "600000,a,5,1,3,0,400000,,,,\n"
            "700000,a,4,0,3,300000,300000,9,800000,,\n"
            "700000,a,3,1,0,0,300000,6,800000,0,3\n"
            "900000,a,0,0,0,100000,100000,,,,\n");
}

TEST(ReplayBinary, AReservationStillOpenAtTheEndIsCommittedThenAndABadUsageLineFails) {
  Outcome run = run_binary("replay --algorithm sliding_window --limit 10 --period 1s",
                           "t_us,key,cost,actual,done_us\n0,a,4,1,5000000\n10,a,1\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us,actual,done_us,"
            "refunded,charged\n"
            "0,a,4,1,6,0,2000000,1,5000000,0,0\n"  // committed in a later window: nothing back
            "10,a,1,1,5,0,1999990,,,,\n");
  Outcome bad = run_binary("replay --algorithm gcra --limit 5 --period 1s",
                           "t_us,key,cost,actual,done_us\n0,a,1,1,9\n5,a,1,2,4\n");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("line 3"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("done_us"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace spillway::cli
