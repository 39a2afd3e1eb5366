// spillway bench: totals add up, exactly the limit is admitted on one key, bad arguments exit 2,
// and an unreachable backend exits 1 with the reason.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

namespace {

struct BenchRun {
  int status;
  std::map<std::string, std::string> fields;  // name=value lines of stdout
  std::string output;                         // stdout and stderr
};

BenchRun bench(const std::string& args) {
  const std::string command = std::string(SPILLWAY_BINARY) + " bench " + args + " 2>&1";
  BenchRun run{};
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    run.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos && line.find(' ') == std::string::npos) {
      run.fields[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return run;
}

TEST(BenchBinary, OneKeyAdmitsExactlyTheLimitAndTotalsAddUp) {
  const BenchRun run = bench(
      "--algorithm sliding_log --limit 50 --period 1h --keys 1 "
      "--concurrency 4 --requests 500");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.fields.at("admitted"), "50");
  EXPECT_EQ(run.fields.at("denied"), "450");
  EXPECT_EQ(run.fields.at("errors"), "0");
  EXPECT_GT(std::stod(run.fields.at("checks_per_second")), 0);
}

TEST(BenchBinary, BadArgumentsExitTwo) {
  for (const char* args : {"--concurrency 0", "--keys x", "--algorithm nope", "--period 0s",
                           "--duration soon", "--frobnicate 1", "stray"}) {
    const BenchRun run = bench(args);
    EXPECT_EQ(run.status, 2) << args << ": " << run.output;
  }
}

TEST(BenchBinary, UnreachableRedisExitsOneWithTheReason) {
  const BenchRun run = bench("--backend redis://127.0.0.1:1 --requests 20 --concurrency 2");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("first error"), std::string::npos) << run.output;
  EXPECT_EQ(run.fields.at("errors"), "20");
}

}  // namespace
