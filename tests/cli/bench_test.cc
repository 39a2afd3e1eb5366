// spillway bench: totals add up, exactly the limit is admitted on one key, bad arguments exit 2,
// and an unreachable backend exits 1 with the reason (errors counted apart from checks/s).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
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
  // Each names what is wrong.
  const std::pair<const char*, const char*> named[] = {
      {"--rate 0", "--rate"},
      {"--threads 0", "--threads"},
      {"--http ftp://127.0.0.1/", "http://"},
      {"--http http://127.0.0.1:99999/v1/check", "port \"99999\""},
      {"--http http://:8080/", "no host"},
      {"--http http://127.0.0.1:8080/ --backend memory", "--http and --backend"},
      {"--http http://[::1/v1/check", "never closes it"},
      {"--http http://[::1]8080/v1/check", "only \":PORT\" may follow"},
  };
  for (const auto& [args, names] : named) {
    const BenchRun run = bench(args);
    EXPECT_EQ(run.status, 2) << args << ": " << run.output;
    EXPECT_NE(run.output.find(names), std::string::npos) << args << ": " << run.output;
  }
}

// Open loop (--rate): a check never starts before its scheduled time, so 1,000 checks offered at
// 2,000/s take at least half a second however fast the store is; every one is decided.
TEST(BenchBinary, AnOpenLoopNeverRunsAheadOfItsSchedule) {
  const auto started = std::chrono::steady_clock::now();
  const BenchRun run = bench("--rate 2000 --requests 1000 --concurrency 2 --keys 10");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.fields.at("offered_per_second"), "2000");
  EXPECT_EQ(std::stoll(run.fields.at("admitted")) + std::stoll(run.fields.at("denied")), 1000);
  EXPECT_GE(seconds, 0.45) << run.output;
  EXPECT_LE(std::stod(run.fields.at("p50_us")), std::stod(run.fields.at("p99_us")));
  EXPECT_LE(std::stod(run.fields.at("p999_us")), std::stod(run.fields.at("max_us")));
}

// --http: a server that answers the seed policy's request stream. Its config: one layer of 5 per
// hour per API key, so that whatever the speed every one of the 1,000 keys is admitted exactly 5
// times of the 6 it is asked.
class BenchHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(config_) << "server: {unknown_attributes: ignore}\n"
                              "layers:\n  - {name: per_key, key: [api_key], limit: 5/h}\n";
    server_ = std::make_unique<spillway::testing::ServeProcess>(
        std::vector<std::string>{"--config", config_}, log_);
    ASSERT_TRUE(server_->ready()) << server_->log();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/check";
  }
  std::string config_ = ::testing::TempDir() + "/bench_http_" + std::to_string(getpid()) + ".yaml";
  std::string log_ = ::testing::TempDir() + "/bench_http_" + std::to_string(getpid()) + ".log";
  std::unique_ptr<spillway::testing::ServeProcess> server_;
};

TEST_F(BenchHttp, TheStreamIsDecidedAsThePolicySays) {
  const BenchRun run = bench("--http " + url() + " --requests 6000 --concurrency 8");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.fields.at("admitted"), "5000");
  EXPECT_EQ(run.fields.at("denied"), "1000");
  EXPECT_EQ(run.fields.at("errors"), "0");
  EXPECT_NE(run.output.find("connections=8 threads=2 loop=closed"), std::string::npos)
      << run.output;
}

// Open loop: the server stopped for 300 ms does not stop the schedule; the requests due meanwhile
// wait, and their latency, counted from when they were due, shows the stall. The stall starts
// 200 ms after the server's first decision (not after a fixed time: bench itself may take half a
// second to start under a sanitizer).
TEST_F(BenchHttp, AnOpenLoopChargesAStalledServerForTheRequestsDueDuringTheStall) {
  std::jthread staller([&] {
    const bool started = spillway::testing::wait_until(
        [&] {
          return spillway::testing::http(server_->port(), "GET", "/metrics")
                     .body.find("spillway_decisions_total{") != std::string::npos;
        },
        std::chrono::seconds(20));
    if (!started) return;  // bench's own output then fails the test
    // Real time: the stall of another process, in the middle of bench's own run.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(server_->pid(), SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(server_->pid(), SIGCONT);
  });
  const BenchRun run = bench("--http " + url() + " --rate 1000 --duration 1500ms --concurrency 4");
  ASSERT_EQ(run.status, 0) << run.output;
  const long long answered =
      std::stoll(run.fields.at("admitted")) + std::stoll(run.fields.at("denied"));
  EXPECT_LE(answered, 1500 + 4) << "never more than the schedule offers";
  // ~300 of the ~1,500 requests came due during the stall, the first ones 300 ms before it ended:
  // more than 1 % waited over 200 ms. A closed loop would show only the 4 in flight (0.3 %).
  EXPECT_GE(std::stod(run.fields.at("p99_us")), 200'000) << run.output;
  EXPECT_GE(std::stod(run.fields.at("max_us")), 250'000) << run.output;
}

// --body/--body-file load a policy the seed stream cannot (its key is "user"); without them every
// request is refused, and the first error shows the server's answer: its status and its body.
TEST(BenchHttpBody, ABodyOfItsOwnLoadsAnyPolicyAndTheFirstErrorShowsTheAnswer) {
  const std::string base = ::testing::TempDir() + "/bench_http_body_" + std::to_string(getpid());
  std::ofstream(base + ".yaml") << "layers:\n  - {name: per_user, key: [user], limit: 5/h}\n";
  spillway::testing::ServeProcess server({"--config", base + ".yaml"}, base + ".log");
  ASSERT_TRUE(server.ready()) << server.log();
  const std::string url =
      " --http http://127.0.0.1:" + std::to_string(server.port()) + "/v1/check --concurrency 2";
  const BenchRun refused = bench(url + " --requests 4");
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_EQ(refused.fields.at("errors"), "4") << refused.output;
  EXPECT_NE(refused.output.find("first error: status 400: {\"error\":"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("user"), std::string::npos) << refused.output;

  const BenchRun inline_body = bench(url + " --requests 8 --body '{\"user\":\"u1\"}'");
  ASSERT_EQ(inline_body.status, 0) << inline_body.output;
  EXPECT_EQ(inline_body.fields.at("admitted"), "5");
  EXPECT_EQ(inline_body.fields.at("denied"), "3");
  std::ofstream(base + ".json") << R"({"user":"u2"})";
  const BenchRun file_body = bench(url + " --requests 6 --body-file " + base + ".json");
  ASSERT_EQ(file_body.status, 0) << file_body.output;
  EXPECT_EQ(file_body.fields.at("admitted"), "5");
  EXPECT_EQ(file_body.fields.at("denied"), "1");
  // Bad uses are named and exit 2.
  EXPECT_EQ(bench("--body '{}' --requests 1").status, 2);
  EXPECT_EQ(bench(url + " --body-file " + base + ".missing --requests 1").status, 2);
  std::remove((base + ".yaml").c_str());
  std::remove((base + ".json").c_str());
}

TEST(BenchHttpDown, AServerThatIsNotThereExitsOneNamingTheConnect) {
  const BenchRun run =
      bench("--http http://127.0.0.1:" + std::to_string(spillway::testing::free_port()) +
            "/v1/check --requests 10 --concurrency 2");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("connect"), std::string::npos) << run.output;
}

// An IPv6 address in brackets is an address to connect to, not a name to resolve.
TEST(BenchHttpDown, ABracketedIpv6AddressIsConnectedToNotResolved) {
  const BenchRun run =
      bench("--http http://[::1]:" + std::to_string(spillway::testing::free_port()) +
            "/v1/check --requests 4 --concurrency 2");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("connect"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("resolve"), std::string::npos) << run.output;
}

// A server on loopback that answers every request with `answer` and then closes the connection,
// `connections` times; what it counted is read after the bench ends.
class CannedHttpServer {
 public:
  CannedHttpServer(std::string answer, int connections) : answer_(std::move(answer)) {
    listener_ = spillway::testing::listen_on_loopback(port_);
    thread_ = std::jthread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        const int client = ::accept(listener_, nullptr, nullptr);
        if (client < 0) return;
        std::string request;
        std::array<char, 4096> buffer{};
        while (request.find("\r\n\r\n") == std::string::npos) {  // the body is tiny: ignored
          const ssize_t n = ::recv(client, buffer.data(), buffer.size(), 0);
          if (n <= 0) break;
          request.append(buffer.data(), static_cast<std::size_t>(n));
        }
        ::send(client, answer_.data(), answer_.size(), MSG_NOSIGNAL);
        ::close(client);
        ++served_;
      }
    });
  }
  ~CannedHttpServer() {
    ::shutdown(listener_, SHUT_RDWR);  // ends a pending accept
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/check"; }
  int served() const { return served_; }

 private:
  std::string answer_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> served_{0};
  std::jthread thread_;
};

// "Connection: close" is a token of a list, in any case: each answer comes on a new connection,
// none is an error.
TEST(BenchHttpDown, AConnectionCloseTokenInAListIsAReconnectNotAnError) {
  CannedHttpServer server(
      "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok", 3);
  const BenchRun run = bench("--http " + server.url() + " --requests 3 --concurrency 1");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.fields.at("admitted"), "3") << run.output;
  EXPECT_EQ(run.fields.at("errors"), "0") << run.output;
  EXPECT_EQ(server.served(), 3);
}

// A Content-Length that is not a number, or one past what the client reads, is an error naming
// it, not an answer framed by a guess.
TEST(BenchHttpDown, AMalformedContentLengthIsAnErrorNamingIt) {
  for (const std::string length : {"12abc", "18446744073709551615", "-1"}) {
    CannedHttpServer server("HTTP/1.1 200 OK\r\nContent-Length: " + length + "\r\n\r\nok", 1);
    const BenchRun run = bench("--http " + server.url() + " --requests 1 --concurrency 1");
    EXPECT_EQ(run.status, 1) << length << ": " << run.output;
    EXPECT_NE(run.output.find("Content-Length \"" + length + "\""), std::string::npos)
        << length << ": " << run.output;
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

namespace spillway {
namespace {

// Against a real nginx that closes every connection after 10 requests (keepalive_requests), with
// the limit_req set-up of bench/compare_http.sh and bench/latency.sh (try_files, so that the
// limit applies before the answer): every request gets its answer on a new connection when the
// old one is closed, none is an error, and nginx admits exactly its burst.
TEST(BenchNginx, ConnectionsNginxClosesAreOpenedAgainAndItsLimitApplies) {
  const std::string dir = ::testing::TempDir() + "/bench_nginx_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::uint16_t port = testing::free_port();
  std::ofstream(dir + "/nginx.conf")
      << "daemon off;\nworker_processes 1;\npid " << dir << "/nginx.pid;\nerror_log " << dir
      << "/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path " << dir
      << ";\n  keepalive_requests 10;\n"
      << "  limit_req_zone $binary_remote_addr zone=edge:1m rate=1r/m;\n"
      << "  server {\n    listen 127.0.0.1:" << port << ";\n"
      << "    location / { limit_req zone=edge burst=99 nodelay; limit_req_status 429;\n"
      << "      try_files /nonexistent @ok; }\n"
      << "    location @ok { return 200 'ok\\n'; }\n  }\n}\n";
  testing::ChildProcess nginx({"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-p", dir},
                              dir + "/nginx.log");
  ASSERT_TRUE(testing::accepts_connections(port)) << testing::read_file(dir + "/error.log");
  const BenchRun run =
      bench("--http http://127.0.0.1:" + std::to_string(port) + "/ --requests 300 --concurrency 2");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.fields.at("errors"), "0");
  EXPECT_EQ(run.fields.at("admitted"), "100") << "1 + a burst of 99 at 1 per minute";
  EXPECT_EQ(run.fields.at("denied"), "200");
}

}  // namespace
}  // namespace spillway
