// parse_listen_address (src/config/listen_address.h): the one parser behind the config file's
// server.listen and `spillway serve --listen`. Both accept the same text (port 0 included: any free
// port) and reject the same text with the same message, which quotes the value.
#include "src/config/listen_address.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "tests/support/process.h"

namespace spillway::policy {
namespace {

struct Good {
  std::string text;
  ListenAddress address;
};

const std::vector<Good>& good_addresses() {
  static const std::vector<Good> cases = {
      {"127.0.0.1:8080", {"127.0.0.1", 8080}},
      {"127.0.0.1:0", {"127.0.0.1", 0}},
      {"0.0.0.0:65535", {"0.0.0.0", 65535}},
      {"localhost:0", {"localhost", 0}},
      {"[::1]:0", {"::1", 0}},
      {"[2001:db8::1]:8080", {"2001:db8::1", 8080}},
  };
  return cases;
}

struct Bad {
  std::string text;
  std::string mention;  // a part of the message besides the quoted value
};

const std::vector<Bad>& bad_addresses() {
  static const std::vector<Bad> cases = {
      {"nowhere", "must be host:port"},
      {"127.0.0.1", "must be host:port"},
      {"::1:8080", "brackets"},
      {"[::1]8080", "must be host:port"},
      {"[127.0.0.1]:80", "no valid IPv6 address"},
      {":8080", "needs a host"},
      {"1.2.3:80", "no valid host"},
      {"my_host:80", "no valid host"},
      {"127.0.0.1:", "port from 0 to 65535"},
      {"[::1]:", "port from 0 to 65535"},
      {"127.0.0.1:65536", "port from 0 to 65535"},
      {"127.0.0.1:-1", "port from 0 to 65535"},
      {"127.0.0.1:+80", "port from 0 to 65535"},
      {"127.0.0.1:8o", "port from 0 to 65535"},
  };
  return cases;
}

std::string config_with_listen(const std::string& text) {
  return "server:\n  listen: \"" + text + "\"\n";
}

TEST(ListenAddress, ParsesHostAndPort) {
  for (const Good& c : good_addresses()) {
    Result<ListenAddress> parsed = parse_listen_address(c.text);
    ASSERT_TRUE(parsed.has_value()) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, c.address) << c.text;
  }
}

TEST(ListenAddress, RejectsWithAMessageQuotingTheValue) {
  for (const Bad& c : bad_addresses()) {
    Result<ListenAddress> parsed = parse_listen_address(c.text);
    ASSERT_FALSE(parsed.has_value()) << c.text;
    const std::string& message = parsed.error().message;
    EXPECT_TRUE(message.starts_with("\"" + c.text + "\"")) << c.text << ": " << message;
    EXPECT_NE(message.find(c.mention), std::string::npos) << c.text << ": " << message;
  }
  EXPECT_EQ(parse_listen_address("127.0.0.1:65536").error().message,
            "\"127.0.0.1:65536\" needs a port from 0 to 65535 (0: any free port)");
}

TEST(ListenAddress, TheConfigAcceptsAndRejectsTheSame) {
  for (const Good& c : good_addresses()) {
    Result<Config> config = parse_config(config_with_listen(c.text));
    ASSERT_TRUE(config.has_value()) << c.text << ": " << config.error().message;
    EXPECT_EQ(config->server.listen, c.text);
  }
  for (const Bad& c : bad_addresses()) {
    Result<Config> config = parse_config(config_with_listen(c.text));
    ASSERT_FALSE(config.has_value()) << c.text;
    EXPECT_EQ(config.error().message,
              "line 2: server.listen: " + parse_listen_address(c.text).error().message);
  }
}

// `spillway serve` with the given arguments until it says where it listens; returns that port
// (-1 if it did not start), and stops it with SIGTERM.
int serve_port(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {"spillway", "serve"};
  all.insert(all.end(), args.begin(), args.end());
  testing::ChildProcess serve(all, log, {.program = SPILLWAY_BINARY});
  const std::string marker = "listening on 127.0.0.1:";
  const bool started = testing::wait_until(
      [&] { return testing::read_file(log).find(marker) != std::string::npos; });
  const int status = serve.stop(SIGTERM);
  if (!started || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  const std::string text = testing::read_file(log);
  const char* begin = text.data() + text.find(marker) + marker.size();
  int port = -1;
  std::from_chars(begin, text.data() + text.size(), port);
  return port;
}

TEST(ListenAddress, ServeTakesPortZeroFromTheFlagAndFromTheConfig) {
  const std::string dir = ::testing::TempDir() + "/listen_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  EXPECT_GT(serve_port({"--listen", "127.0.0.1:0"}, dir + "/flag.log"), 0)
      << testing::read_file(dir + "/flag.log");
  const std::string config = dir + "/spillway.yaml";
  std::ofstream(config) << config_with_listen("127.0.0.1:0");
  EXPECT_GT(serve_port({"--config", config}, dir + "/config.log"), 0)
      << testing::read_file(dir + "/config.log");
}

TEST(ListenAddress, ServeRejectsWhatTheConfigRejects) {
  for (const Bad& c : bad_addresses()) {
    // `timeout`: an address accepted by mistake would leave the server running.
    const testing::CommandResult run = testing::run_command(
        "timeout 10 " + std::string(SPILLWAY_BINARY) + " serve --listen '" + c.text + "' 2>&1");
    EXPECT_EQ(run.status, 2) << c.text << ": " << run.out;
    EXPECT_EQ(run.out,
              "spillway serve: --listen: " + parse_listen_address(c.text).error().message + "\n");
  }
}

}  // namespace
}  // namespace spillway::policy
