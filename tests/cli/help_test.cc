// Every subcommand of the real binary answers --help (its usage on stdout, exit 0, nothing run),
// and `spillway --version` prints the version the build was configured with.
#include <gtest/gtest.h>

#include <string>

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
      {"serve", {"--config", "--listen", "--backend", "--grpc-listen", "--rls-config"}},
      {"replay", {"--algorithm", "--limit", "--period", "--burst", "--backend"}},
      {"bench",
       {"--backend", "--algorithm", "--limit", "--period", "--burst", "--concurrency", "--keys",
        "--duration", "--requests", "--batch", "--in-flight"}},
      {"validate", {"FILE", "--rls"}},
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

TEST(Version, PrintsTheConfiguredVersion) {
  for (const char* form : {"--version", "version"}) {
    BinaryRun run = run_binary(form);
    EXPECT_EQ(run.status, 0) << form;
    EXPECT_EQ(run.out, std::string("spillway ") + SPILLWAY_VERSION + "\n") << form;
  }
}

}  // namespace
