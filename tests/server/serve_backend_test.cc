// What `spillway serve` does about its backend at start: it connects before it accepts (so the
// very first request is charged), says so in one line when the backend does not answer (the URL
// without its password, the error, what on_error now does) and again when it answers, exits 1
// instead with --require-backend / backend.require_at_start; and a gRPC port in use is one clear
// line and exit 1 before anything says "listening", with no raw gRPC log line.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

std::string backend_temp(const std::string& name) {
  return "/tmp/spillway_serve_backend_" + std::to_string(::getpid()) + "_" + name;
}

const std::string kLimitBody = R"({"key":"first","limit":2,"period":"1m"})";

// The statuses of three /v1/limit requests of one key under a limit of 2, sent back to back.
std::vector<int> three_requests(std::uint16_t port) {
  std::vector<int> statuses;
  for (int i = 0; i < 3; ++i) {
    statuses.push_back(testing::http(port, "POST", "/v1/limit", kLimitBody).status);
  }
  return statuses;
}

// Lines of `text` that contain `what`.
int lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.find(what) != std::string::npos;
  return n;
}

TEST(ServeBackend, ADeadBackendIsOneLineThenOnErrorAnswersAndALineWhenItAnswersAgain) {
  RedisServer redis("requirepass s3cret");
  const std::string url = "redis://:s3cret@127.0.0.1:" + std::to_string(redis.port());
  redis.stop();  // the port stays reserved for start(); nothing listens on it meanwhile
  testing::ServeProcess serve({"--backend", url}, backend_temp("dead.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::string log = serve.log();
  const std::string line =
      "spillway serve: backend redis://:***@127.0.0.1:" + std::to_string(redis.port()) +
      " is not answering (";
  ASSERT_EQ(lines_with(log, line), 1) << log;
  EXPECT_LT(log.find(line), log.find("listening")) << log;
  EXPECT_EQ(lines_with(log, "(connect failed: Connection refused); on_error allow"), 1) << log;
  EXPECT_EQ(lines_with(log,
                       "on_error allow: failing open, requests are not limited until it "
                       "answers"),
            1)
      << log;
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << "the password was printed:\n" << log;

  // on_error allow: answered, not limited.
  const testing::HttpReply reply = testing::http(serve.port(), "POST", "/v1/limit", kLimitBody);
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_NE(reply.header("x-spillway-backend-error"), "") << reply.body;

  redis.start();
  EXPECT_TRUE(testing::wait_until([&] {
    return serve.log().find("spillway serve: backend redis://:***@127.0.0.1:" +
                            std::to_string(redis.port()) + " answers again") != std::string::npos;
  })) << serve.log();
  EXPECT_EQ(three_requests(serve.port()), (std::vector<int>{200, 200, 429})) << serve.log();
  EXPECT_EQ(serve.stop(SIGTERM), 0) << serve.log();
  EXPECT_EQ(serve.log().find("s3cret"), std::string::npos) << serve.log();
}

TEST(ServeBackend, RequireBackendExitsOneWithTheLine) {
  const std::string dead = "redis://127.0.0.1:" + std::to_string(testing::free_port());
  const testing::BinaryRun flag =
      testing::run_binary("serve --listen 127.0.0.1:0 --backend " + dead + " --require-backend");
  EXPECT_EQ(flag.status, 1) << flag.err;
  EXPECT_EQ(lines_with(flag.err, "spillway serve: backend " + dead + " is not answering ("), 1)
      << flag.err;
  EXPECT_NE(flag.err.find("--require-backend: not starting"), std::string::npos) << flag.err;
  EXPECT_EQ(flag.err.find("listening"), std::string::npos) << flag.err;

  const std::string config = backend_temp("require.yaml");
  std::ofstream(config) << "backend:\n  url: " << dead << "\n  require_at_start: true\n";
  const testing::BinaryRun file =
      testing::run_binary("serve --listen 127.0.0.1:0 --config " + config);
  EXPECT_EQ(file.status, 1) << file.err;
  EXPECT_EQ(lines_with(file.err, "spillway serve: backend " + dead + " is not answering ("), 1)
      << file.err;
  EXPECT_NE(file.err.find("backend.require_at_start: not starting"), std::string::npos) << file.err;
  EXPECT_EQ(file.err.find("listening"), std::string::npos) << file.err;
  std::remove(config.c_str());

  // A backend that answers: --require-backend starts as usual.
  RedisServer redis;
  testing::ServeProcess serve({"--backend", redis.url(), "--require-backend"},
                              backend_temp("live.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  EXPECT_EQ(serve.log().find("not answering"), std::string::npos) << serve.log();
}

// Established TCP connections (IPv4) whose remote port is `port`: clients of a local server.
int connections_to(std::uint16_t port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  int count = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const std::size_t colon = remote.find(':');
    if (colon == std::string::npos || state != "01") continue;
    count += std::stoul(remote.substr(colon + 1), nullptr, 16) == port;
  }
  return count;
}

// The backend's first connection is slow: Redis is stopped (SIGSTOP) until serve has connected
// to it (the kernel completes the handshake; nothing answers AUTH or TLS). serve must not have
// said "listening" by then, or its first requests would fail open uncharged and the third would
// be admitted; once Redis runs again they are charged.
void first_requests_are_charged(RedisServer& redis, const std::string& url,
                                const std::string& name) {
  const int before = connections_to(redis.port());
  redis.pause();
  testing::ServeProcess serve({"--backend", url}, backend_temp(name));
  testing::wait_until([&] { return connections_to(redis.port()) > before; }, 20s);
  const bool connected = connections_to(redis.port()) > before;
  const std::string while_stopped = serve.log();
  redis.resume();
  ASSERT_TRUE(connected) << "serve never connected to Redis: " << serve.log();
  EXPECT_EQ(while_stopped.find("listening"), std::string::npos)
      << "serve accepted before its backend answered: " << while_stopped;
  ASSERT_TRUE(serve.ready()) << serve.log();
  EXPECT_EQ(three_requests(serve.port()), (std::vector<int>{200, 200, 429})) << serve.log();
}

TEST(ServeBackend, TheFirstRequestAfterListeningIsCharged) {
  RedisServer redis("requirepass s3cret");
  first_requests_are_charged(redis, "redis://:s3cret@127.0.0.1:" + std::to_string(redis.port()),
                             "first.log");
}

TEST(ServeBackend, TheFirstRequestAfterListeningIsChargedOverTls) {
  RedisServer redis(RedisServer::Tls{});
  first_requests_are_charged(redis, redis.url(), "first_tls.log");
}

TEST(ServeBackend, AGrpcPortInUseIsOneLineAndExitOneBeforeListening) {
  // A plain listener (no SO_REUSEPORT, which gRPC's own listeners set) holds the port.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const std::string rules = backend_temp("rules.yaml");
  std::ofstream(rules) << "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, "
                          "requests_per_unit: 5}\n";

  const testing::BinaryRun run = testing::run_binary(
      "serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:" + port + " --rls-config " + rules);
  ::close(holder);
  std::remove(rules.c_str());
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_EQ(run.err,
            "spillway serve: cannot listen for gRPC on 127.0.0.1:" + port + ": address in use\n");
  EXPECT_EQ(run.err.find("listening"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("chttp2"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace spillway
