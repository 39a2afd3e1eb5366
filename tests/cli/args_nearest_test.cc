// The command line's parsing of options (src/cli/args.h) and its "did you mean"
// (src/cli/nearest.h):
// "--" ends the options, an unknown option names the nearest known one; and durations as people
// read them (src/cli/human_duration.h). Pure: no process started.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/human_duration.h"
#include "src/cli/nearest.h"

namespace {

using spillway::cli::Args;

// argv for Args::parse; argv[0] is the program.
struct ArgsNearestArgv {
  std::vector<std::string> words;
  std::vector<char*> pointers;
  explicit ArgsNearestArgv(std::vector<std::string> w) : words(std::move(w)) {
    for (std::string& word : words) pointers.push_back(word.data());
  }
  int argc() const { return static_cast<int>(pointers.size()); }
  char** argv() { return pointers.data(); }
};

TEST(CliArgsNearest, EditDistanceCountsSingleEdits) {
  EXPECT_EQ(spillway::cli::edit_distance("listen", "listen"), 0u);
  EXPECT_EQ(spillway::cli::edit_distance("lisen", "listen"), 1u);
  EXPECT_EQ(spillway::cli::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(spillway::cli::edit_distance("", "abc"), 3u);
  EXPECT_EQ(spillway::cli::edit_distance("abc", ""), 3u);
  EXPECT_EQ(spillway::cli::edit_distance("lsit", "list"), 1u);  // a swap is one edit
}

TEST(CliArgsNearest, AnUnknownOptionNamesTheNearestKnownOne) {
  ArgsNearestArgv typed({"spillway", "--lisen", "127.0.0.1:8080"});
  const auto parsed =
      Args::parse(typed.argc(), typed.argv(), 1, {"listen", "config", "backend", "grpc-listen"});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "unknown option --lisen; did you mean --listen?");
  // Nothing near: no guess.
  ArgsNearestArgv far({"spillway", "--zzzzzzzz"});
  const auto unguessed = Args::parse(far.argc(), far.argv(), 1, {"listen", "config"});
  ASSERT_FALSE(unguessed);
  EXPECT_EQ(unguessed.error().message, "unknown option --zzzzzzzz");
}

TEST(CliArgsNearest, DoubleDashEndsTheOptions) {
  ArgsNearestArgv typed({"spillway", "--rls", "r.yaml", "--", "--not-an-option", "-x", "--"});
  const auto parsed = Args::parse(typed.argc(), typed.argv(), 1, {"rls"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->get("rls"), "r.yaml");
  EXPECT_EQ(parsed->positional(), (std::vector<std::string>{"--not-an-option", "-x", "--"}));
}

TEST(CliArgsNearest, NearestPicksTheClosestAndRefusesFarOnes) {
  const std::vector<std::string_view> commands = {"serve",    "replay",  "simulate", "bench",
                                                  "validate", "inspect", "tenants"};
  EXPECT_EQ(spillway::cli::nearest_name("serv", commands), "serve");
  EXPECT_EQ(spillway::cli::nearest_name("tenant", commands), "tenants");
  EXPECT_EQ(spillway::cli::nearest_name("frobnicate", commands), std::nullopt);
  EXPECT_EQ(spillway::cli::did_you_mean("bnech", commands), "; did you mean bench?");
}

TEST(CliHumanDuration, LargestUnitOneDecimal) {
  using spillway::cli::human_duration;
  EXPECT_EQ(human_duration(59'849'622), "59.8 s");
  EXPECT_EQ(human_duration(250'000), "250 ms");
  EXPECT_EQ(human_duration(1'500), "1.5 ms");
  EXPECT_EQ(human_duration(12), "12 us");
  EXPECT_EQ(human_duration(0), "0 us");
  EXPECT_EQ(human_duration(90'000'000), "1.5 min");
  EXPECT_EQ(human_duration(3 * 3'600'000'000LL), "3 h");
  EXPECT_EQ(human_duration(2 * 86'400'000'000LL), "2 d");
  EXPECT_EQ(human_duration(-250'000), "-250 ms");
}

}  // namespace
