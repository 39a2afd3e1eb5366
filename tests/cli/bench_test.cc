// spillway bench: totals add up, exactly the limit is admitted on one key, bad arguments exit 2,
// and an unreachable backend exits 1 with the reason (errors counted apart from checks/s).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/redis_server.h"

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

// Once the circuit breaker opens it answers at once; bench issues the next check from inside
// that answer. That chain must loop, not recurse (it overflowed the stack: SIGSEGV), and the
// errors are counted apart from the checks per second.
TEST(BenchBinary, ADeadBackendForOneSecondExitsOneWithTheErrorAndNoChecksPerSecond) {
  const BenchRun run = bench("--backend redis://127.0.0.1:1 --duration 1s --concurrency 2");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("first error: redis 127.0.0.1:1"), std::string::npos) << run.output;
  EXPECT_EQ(run.fields.at("checks_per_second"), "0") << run.output;
  EXPECT_GT(std::stod(run.fields.at("errors_per_second")), 0) << run.output;
  EXPECT_GT(std::stoll(run.fields.at("errors")), 1000) << "the circuit did not answer at once";
  EXPECT_EQ(run.fields.at("admitted"), "0");
}

// On Redis, bench's keys live under --key-prefix, by default "spillway-bench": never under
// "spillway", where serve keeps its users' budgets.
TEST(BenchBinary, KeysGoUnderTheKeyPrefixAndNotServesByDefault) {
  spillway::testing::RedisServer redis;
  const auto keys = [&] {
    std::vector<std::string> found;
    std::istringstream lines(redis.cli("--scan"));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) found.push_back(line);
    }
    return found;
  };
  // An hour's period: the keys live for minutes, so a slow (sanitized) run still finds them.
  const std::string common =
      "--backend " + redis.url() + " --requests 40 --keys 4 --limit 10 --period 1h";
  const BenchRun defaulted = bench(common);
  ASSERT_EQ(defaulted.status, 0) << defaulted.output;
  std::vector<std::string> written = keys();
  ASSERT_FALSE(written.empty());
  for (const std::string& key : written) {
    EXPECT_TRUE(key.starts_with("spillway-bench:")) << key;
  }
  redis.cli("FLUSHALL");
  const BenchRun chosen = bench(common + " --key-prefix load-test-7");
  ASSERT_EQ(chosen.status, 0) << chosen.output;
  written = keys();
  ASSERT_FALSE(written.empty());
  for (const std::string& key : written) EXPECT_TRUE(key.starts_with("load-test-7:")) << key;
  // An empty prefix is refused, naming the option.
  const BenchRun empty = bench(common + " --key-prefix=");
  EXPECT_EQ(empty.status, 2) << empty.output;
  EXPECT_NE(empty.output.find("--key-prefix"), std::string::npos) << empty.output;
}

}  // namespace
