// `spillway replay --backend redis://...` prints exactly what `--backend memory` prints, for
// random traces of every algorithm and for the shipped sample trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "spillway/algorithm.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    out.append(buffer.data(), n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

std::string write_random_trace(std::mt19937_64& random, int limit, int index) {
  const std::string path = ::testing::TempDir() + "/redis_replay_" + std::to_string(getpid()) +
                           "_" + std::to_string(index) + ".csv";
  std::ofstream trace(path);
  trace << "# generated\n";
  long long t = static_cast<long long>(random() % 1000);
  for (int i = 0; i < 120; ++i) {
    t += static_cast<long long>(random() % 40'000) - 4'000;  // sometimes backwards
    if (t < 0) t = 0;
    trace << t << ",key" << random() % 3 << ',' << random() % (limit + 2) << '\n';
  }
  return path;
}

TEST(ReplayRedis, PrintsTheSameAsMemoryForRandomTracesOfEveryAlgorithm) {
  testing::RedisServer server;
  const std::string cluster = testing::shared_cluster().url();
  std::mt19937_64 random(20261130);
  int index = 0;
  for (Algorithm each : kAlgorithms) {
    const std::string algorithm(algorithm_name(each));
    for (int round = 0; round < 3; ++round) {
      const int limit = 1 + static_cast<int>(random() % 12);
      const std::string period = std::to_string(50 + random() % 150) + "ms";
      std::string args = std::string(" replay --algorithm ") + algorithm + " --limit " +
                         std::to_string(limit) + " --period " + period;
      if (takes_burst(each)) {
        args += " --burst " + std::to_string(1 + random() % 15);
      }
      const std::string trace = write_random_trace(random, limit, index++);
      const std::string memory =
          run(std::string(SPILLWAY_BINARY) + args + " --backend memory " + trace);
      const std::string redis =
          run(std::string(SPILLWAY_BINARY) + args + " --backend " + server.url() + " " + trace);
      const std::string on_cluster =
          run(std::string(SPILLWAY_BINARY) + args + " --backend " + cluster + " " + trace);
      ASSERT_GT(memory.size(), 1000u);
      EXPECT_EQ(memory, redis) << args << " " << trace;
      EXPECT_EQ(memory, on_cluster) << args << " " << trace << " on the cluster";
    }
  }
}

// A trace with usage columns: every other line reserves its cost and commits an actual cost
// below, at or above it, now or later (up to two periods).
std::string write_random_usage_trace(std::mt19937_64& random, int limit, int index) {
  const std::string path = ::testing::TempDir() + "/redis_replay_usage_" +
                           std::to_string(getpid()) + "_" + std::to_string(index) + ".csv";
  std::ofstream trace(path);
  trace << "t_us,key,cost,actual,done_us\n";
  long long t = static_cast<long long>(random() % 1000);
  for (int i = 0; i < 120; ++i) {
    t += static_cast<long long>(random() % 40'000);
    trace << t << ",key" << random() % 3 << ',' << random() % (limit + 2);
    if (random() % 2 == 0) {
      trace << ',' << random() % (limit + 3) << ','
            << t + static_cast<long long>(random() % 300'000);
    }
    trace << '\n';
  }
  return path;
}

TEST(ReplayRedis, UsageTracesPrintTheSameAsMemoryOnRedisAndACluster) {
  testing::RedisServer server;
  const std::string cluster = testing::shared_cluster().url();
  std::mt19937_64 random(20261203);
  int index = 0;
  for (Algorithm each : kAlgorithms) {
    const std::string algorithm(algorithm_name(each));
    const int limit = 2 + static_cast<int>(random() % 10);
    std::string args = std::string(" replay --algorithm ") + algorithm + " --limit " +
                       std::to_string(limit) + " --period " + std::to_string(50 + random() % 100) +
                       "ms";
    if (takes_burst(each)) args += " --burst " + std::to_string(1 + random() % 12);
    const std::string trace = write_random_usage_trace(random, limit, index++);
    const std::string memory =
        run(std::string(SPILLWAY_BINARY) + args + " --backend memory " + trace);
    ASSERT_NE(memory.find(",refunded,charged\n"), std::string::npos) << memory;
    EXPECT_EQ(memory,
              run(std::string(SPILLWAY_BINARY) + args + " --backend " + server.url() + " " + trace))
        << args << " " << trace;
    EXPECT_EQ(memory,
              run(std::string(SPILLWAY_BINARY) + args + " --backend " + cluster + " " + trace))
        << args << " " << trace << " on the cluster";
  }
}

TEST(ReplayRedis, SampleTraceMatchesAndRerunsStartFromIdle) {
  testing::RedisServer server;
  const std::string trace = std::string(SPILLWAY_SOURCE_DIR) + "/examples/traces/login-burst.csv";
  const std::string args = " replay --algorithm gcra --limit 5 --period 1s ";
  const std::string memory = run(std::string(SPILLWAY_BINARY) + args + trace);
  const std::string first =
      run(std::string(SPILLWAY_BINARY) + args + "--backend " + server.url() + " " + trace);
  const std::string second =
      run(std::string(SPILLWAY_BINARY) + args + "--backend " + server.url() + " " + trace);
  EXPECT_EQ(memory, first);
  EXPECT_EQ(memory, second);
}

TEST(ReplayRedis, UnreachableRedisFailsWithAMessage) {
  const std::string command = std::string(SPILLWAY_BINARY) +
                              " replay --algorithm gcra --limit 5 --period 1s --backend "
                              "redis://127.0.0.1:1 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "w");
  std::fputs("0,k\n", pipe);
  const int status = pclose(pipe);
  EXPECT_NE(status, 0);
}

}  // namespace
}  // namespace spillway
