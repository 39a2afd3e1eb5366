// Every subcommand of the real binary answers --help (its usage on stdout, exit 0, nothing run),
// and `spillway --version` prints the version the build was configured with.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace {

using spillway::testing::BinaryRun;
using spillway::testing::run_binary;

struct Subcommand {
  std::string name;
  std::vector<std::string> flags;  // each must be named in its usage
};

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"serve",
       {"--config", "--listen", "--backend", "--grpc-listen", "--rls-config", "--require-backend"}},
      {"replay",
       {"--algorithm", "--limit", "--period", "--burst", "--max-delay", "--backend", "FILE"}},
      {"simulate",
       {"--trace", "--pattern", "--rate", "--duration", "--keys", "--seed", "--limit", "--period",
        "--burst", "--max-delay", "--algorithms", "--out", "--csv", "--svg", "--trace-out"}},
      {"bench",
       {"--backend", "--algorithm", "--limit", "--period", "--burst", "--max-delay",
        "--concurrency", "--keys", "--duration", "--requests", "--rate", "--http", "--threads",
        "--batch", "--in-flight", "--key-prefix", "--json", "--body", "--body-file"}},
      {"validate", {"FILE", "--rls", "--json"}},
  };
  return all;
}

TEST(Help, EverySubcommandPrintsItsUsageAndExitsZero) {
  for (const Subcommand& command : subcommands()) {
    for (const std::string& form : {std::string("--help"), std::string("-h")}) {
      const BinaryRun run = run_binary(command.name + " " + form);
      EXPECT_EQ(run.status, 0) << command.name << " " << form << ": " << run.err;
      EXPECT_TRUE(run.out.starts_with("usage: spillway " + command.name + " ")) << run.out;
      EXPECT_EQ(run.err, "") << command.name;
      for (const std::string& flag : command.flags) {
        EXPECT_NE(run.out.find(flag), std::string::npos) << command.name << " usage lacks " << flag;
      }
    }
  }
}

TEST(Help, HelpWinsOverOtherArgumentsAndRunsNothing) {
  // Without --help these would replay stdin or fail on the missing file.
  BinaryRun replay = run_binary("replay --algorithm gcra --limit 5 --help", "0,k\n");
  EXPECT_EQ(replay.status, 0) << replay.err;
  EXPECT_TRUE(replay.out.starts_with("usage: spillway replay ")) << replay.out;
  EXPECT_EQ(replay.out.find("t_us,key,cost,allowed"), std::string::npos) << "replay ran";
  BinaryRun validate = run_binary("validate /nonexistent/spillway.yaml --help");
  EXPECT_EQ(validate.status, 0) << validate.err;
}

TEST(Help, TopLevelHelpListsEveryCommandAndBadCommandsStillFail) {
  BinaryRun help = run_binary("--help");
  EXPECT_EQ(help.status, 0);
  for (const Subcommand& command : subcommands()) {
    EXPECT_NE(help.out.find("  " + command.name + " "), std::string::npos) << command.name;
  }
  BinaryRun unknown = run_binary("frobnicate --help");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos) << unknown.err;
  BinaryRun bad_option = run_binary("replay --bogus");
  EXPECT_EQ(bad_option.status, 2);
  EXPECT_NE(bad_option.err.find("unknown option --bogus"), std::string::npos) << bad_option.err;
}

TEST(Help, ATypoNamesTheNearestCommandOrOption) {
  const BinaryRun command = run_binary("serv");
  EXPECT_EQ(command.status, 2);
  EXPECT_NE(command.err.find("unknown command \"serv\"; did you mean serve?"), std::string::npos)
      << command.err;
  const BinaryRun option = run_binary("serve --lisen 127.0.0.1:0");
  EXPECT_EQ(option.status, 2);
  EXPECT_NE(option.err.find("unknown option --lisen; did you mean --listen?"), std::string::npos)
      << option.err;
  const BinaryRun sub = run_binary("tenants lsit --admin http://127.0.0.1:1 --token-file /x");
  EXPECT_EQ(sub.status, 2);
  EXPECT_NE(sub.err.find("did you mean list?"), std::string::npos) << sub.err;
}

TEST(Help, DoubleDashEndsTheOptions) {
  // After "--" a file name starting with "--" is a file, not an option.
  const BinaryRun run = run_binary("validate -- --no-such-config.yaml");
  EXPECT_EQ(run.err.find("unknown option"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--no-such-config.yaml"), std::string::npos) << run.err;
  EXPECT_NE(run.status, 0);
}

// The entries of a help's "options:" section: "--flag VALUE" (or "FILE") -> its text, the
// lines of one entry joined.
std::map<std::string, std::string> option_entries(const std::string& help) {
  std::map<std::string, std::string> entries;
  std::istringstream lines(help.substr(help.find("\noptions:\n") + 10));
  std::string current;
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    if (line.starts_with("  ") && line[2] != ' ') {
      const std::size_t end = line.find(' ', 2);
      current = line.substr(2, end - 2);
      entries[current] = end == std::string::npos ? "" : line.substr(end);
    } else {
      entries[current] += " " + line;
    }
  }
  return entries;
}

TEST(Help, HelpCommandIsTheCommandsOwnHelp) {
  for (const Subcommand& command : subcommands()) {
    const BinaryRun help = run_binary("help " + command.name);
    const BinaryRun flag = run_binary(command.name + " --help");
    EXPECT_EQ(help.status, 0) << command.name << ": " << help.err;
    EXPECT_EQ(help.err, "") << command.name;
    EXPECT_EQ(help.out, flag.out) << command.name;
    EXPECT_TRUE(help.out.starts_with("usage: spillway " + command.name + " ")) << help.out;
  }
  const BinaryRun unknown = run_binary("help frobnicate");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos) << unknown.err;
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(run_binary("help replay bench").status, 2);
}

// Every option has an entry of its own that says its default (or that it is required), every
// entry is an option the command accepts, and the values an option takes are spelled out.
TEST(Help, EveryOptionIsListedWithItsDefaultAndItsValues) {
  for (const Subcommand& command : subcommands()) {
    const BinaryRun run = run_binary("help " + command.name);
    ASSERT_EQ(run.status, 0) << command.name;
    const std::map<std::string, std::string> entries = option_entries(run.out);
    EXPECT_EQ(entries.size(), command.flags.size()) << command.name << ":\n" << run.out;
    for (const std::string& flag : command.flags) {
      ASSERT_TRUE(entries.contains(flag)) << command.name << " lacks an entry for " << flag;
      const std::string& text = entries.at(flag);
      EXPECT_TRUE(text.find("default: ") != std::string::npos ||
                  text.find("required") != std::string::npos)
          << command.name << " " << flag << ":" << text;
    }
    for (const auto& [flag, text] : entries) {
      if (!flag.starts_with("--")) continue;
      // Accepted: whatever else goes wrong, not an unknown option.
      const BinaryRun tried = run_binary(command.name + " " + flag + "=x --no-such-flag-at-all");
      EXPECT_EQ(tried.err.find("unknown option " + flag), std::string::npos)
          << command.name << " lists " << flag << " but refuses it: " << tried.err;
    }
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(line.size(), 100u) << command.name << ": " << line;  // bytes: "…" counts 3
    }
  }
  const std::vector<std::string> algorithms = {"fixed_window", "sliding_window", "sliding_log",
                                               "token_bucket", "gcra"};
  for (const char* command : {"replay", "bench"}) {
    const auto entries = option_entries(run_binary(std::string("help ") + command).out);
    for (const std::string& name : algorithms) {
      EXPECT_NE(entries.at("--algorithm").find(name), std::string::npos) << command << " " << name;
    }
  }
  const BinaryRun simulate = run_binary("help simulate");
  const auto entries = option_entries(simulate.out);
  for (const std::string& name : algorithms) {
    EXPECT_NE(entries.at("--algorithms").find(name), std::string::npos) << name;
  }
  for (const char* pattern : {"steady", "burst", "ramp", "diurnal", "attack", "many-tenants"}) {
    EXPECT_NE(entries.at("--pattern").find(pattern), std::string::npos) << pattern;
  }
  // Durations name their units; bench names its defaults.
  for (const char* unit : {" us,", " ms,", " s,", " m,", " h,", " d,", "min", "hour", "day"}) {
    EXPECT_NE(simulate.out.find(unit), std::string::npos) << unit;
  }
  const auto bench = option_entries(run_binary("help bench").out);
  EXPECT_NE(bench.at("--key-prefix").find("default: spillway-bench"), std::string::npos);
  EXPECT_NE(bench.at("--algorithm").find("default: gcra"), std::string::npos);
  EXPECT_NE(bench.at("--duration").find("default: 5s"), std::string::npos);
  EXPECT_NE(bench.at("--backend").find("default: memory"), std::string::npos);
}

TEST(Version, PrintsTheConfiguredVersion) {
  for (const char* form : {"--version", "version"}) {
    BinaryRun run = run_binary(form);
    EXPECT_EQ(run.status, 0) << form;
    EXPECT_EQ(run.out, std::string("spillway ") + SPILLWAY_VERSION + "\n") << form;
  }
}

}  // namespace
