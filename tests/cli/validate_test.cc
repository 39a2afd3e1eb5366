// spillway validate FILE: the real binary on good, bad and missing config files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/process.h"

namespace {

using Outcome = spillway::testing::BinaryRun;
using spillway::testing::run_binary;

// A path unique to this process and call: ctest runs tests in parallel processes.
std::string temp_path(const std::string& suffix) {
  static int calls = 0;
  return ::testing::TempDir() + "/validate_" + std::to_string(getpid()) + "_" +
         std::to_string(calls++) + suffix;
}

// Writes `text` to a fresh config file and returns its path.
std::string write_config(const std::string& text) {
  const std::string path = temp_path(".yaml");
  std::ofstream(path) << text;
  return path;
}

TEST(ValidateBinary, GoodConfigPrintsOkWithTheLayerCount) {
  const std::string path = write_config(
      "server:\n  listen: 127.0.0.1:8080\nlayers:\n  - name: edge\n    key: [ip]\n"
      "    limit: 100/s\n  - name: user\n    key: [user]\n    limit: 10/s\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, path + ": ok (2 layers)\n");
  EXPECT_EQ(run.err, "");
}

TEST(ValidateBinary, EmptyFileIsTheBuiltInPolicy) {
  const std::string path = write_config("");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, path + ": ok (3 layers)\n");
}

TEST(ValidateBinary, BadConfigNamesTheLineAndFieldAndFails) {
  const std::string path = write_config(
      "backend:\n  url: memory\nlayers:\n  - name: edge\n    key: [ip]\n    limit: 60/mn\n");
  Outcome run = run_binary("validate " + path);
  std::remove(path.c_str());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + path + ": line 6: layers[0].limit: "))
      << run.err;
  EXPECT_NE(run.err.find("\"60/mn\""), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;  // one line
}

TEST(ValidateBinary, MissingFileFailsNamingThePath) {
  const std::string path = temp_path("_missing.yaml");
  Outcome run = run_binary("validate " + path);
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + path + ": ")) << run.err;
}

TEST(ValidateBinary, BadArgumentsExitTwoWithOneLine) {
  for (const std::string args :
       {"validate", "validate a.yaml b.yaml", "validate --strict a.yaml"}) {
    Outcome run = run_binary(args);
    EXPECT_EQ(run.status, 2) << args;
    EXPECT_TRUE(run.err.starts_with("spillway validate: ")) << args << ": " << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << args << ": " << run.err;
    EXPECT_EQ(run.out, "") << args;
  }
}

TEST(ValidateBinary, RlsRulesAreCheckedAsServeLoadsThem) {
  const std::string good = write_config(
      "domain: validate_rls\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n"
      "      requests_per_unit: 10\n");
  Outcome run = run_binary("validate --rls " + good);
  std::remove(good.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, good + ": ok (1 domain: validate_rls)\n");

  const std::string bad = write_config(
      "domain: validate_rls\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n"
      "      requests_per_unit: 10\n      shadow: true\n");
  run = run_binary("validate --rls " + bad);
  std::remove(bad.c_str());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("spillway validate: " + bad +
                                  ": line 7: descriptors[0].rate_limit.shadow: unknown field"))
      << run.err;

  run = run_binary("validate --rls " + good + " extra");
  EXPECT_EQ(run.status, 2);
}

}  // namespace
