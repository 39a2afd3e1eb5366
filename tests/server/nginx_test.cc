// End to end through a real nginx using examples/nginx/spillway.conf and spillway.yaml (the
// configuration in docs/server.md, ports changed): admitted requests reach the application; past
// the limit the client gets 429 with Retry-After and the application sees nothing more.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

using testing::free_port;
using testing::read_file;
using testing::wait_until;

// spillway serving `config` (a file of examples/nginx/) behind nginx with
// examples/nginx/spillway.conf (this test's ports), and an "application" that logs each request
// it gets as "<arrival, s since the epoch with ms> <X-Spillway-Delay-Ms> <uri>" in app.log.
struct NginxFront {
  std::string dir;
  std::uint16_t spillway_port = 0, nginx_port = 0, app_port = 0;
  std::optional<testing::ChildProcess> spillway, nginx;

  explicit NginxFront(const std::string& config, const std::string& name) {
    dir = ::testing::TempDir() + "/nginx_" + name + "_" + std::to_string(getpid());
    EXPECT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
    spillway_port = free_port();
    nginx_port = free_port();
    app_port = free_port();
    // --listen gives this test's port.
    std::ofstream(dir + "/spillway.yaml")
        << read_file(std::string(SPILLWAY_SOURCE_DIR) + "/examples/nginx/" + config);
    spillway.emplace(
        std::vector<std::string>{"spillway", "serve", "--config", dir + "/spillway.yaml",
                                 "--listen", "127.0.0.1:" + std::to_string(spillway_port)},
        dir + "/spillway.log", testing::ChildOptions{.program = SPILLWAY_BINARY});
    EXPECT_TRUE(testing::accepts_connections(spillway_port)) << read_file(dir + "/spillway.log");
    std::string site =
        read_file(std::string(SPILLWAY_SOURCE_DIR) + "/examples/nginx/spillway.conf");
    site = std::regex_replace(site, std::regex("127\\.0\\.0\\.1:8000"),
                              "127.0.0.1:" + std::to_string(nginx_port));
    site = std::regex_replace(site, std::regex("127\\.0\\.0\\.1:8080"),
                              "127.0.0.1:" + std::to_string(spillway_port));
    site = std::regex_replace(site, std::regex("127\\.0\\.0\\.1:9000"),
                              "127.0.0.1:" + std::to_string(app_port));
    std::ofstream(dir + "/nginx.conf")
        << "daemon off;\nworker_processes 1;\npid " << dir << "/nginx.pid;\nerror_log " << dir
        << "/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path " << dir
        << ";\n  proxy_temp_path " << dir << ";\n  fastcgi_temp_path " << dir
        << ";\n  uwsgi_temp_path " << dir << ";\n  scgi_temp_path " << dir << ";\n"
        << "  log_format arrival '$msec $http_x_spillway_delay_ms $request_uri';\n"
        << "  server {\n    listen 127.0.0.1:" << app_port << ";\n    access_log " << dir
        << "/app.log arrival;\n    location / { return 200 'application\\n'; }\n  }\n"
        << site << "}\n";
    nginx.emplace(std::vector<std::string>{"nginx", "-c", dir + "/nginx.conf", "-p", dir},
                  dir + "/nginx.out", testing::ChildOptions{.program = "/usr/sbin/nginx"});
    EXPECT_TRUE(testing::accepts_connections(nginx_port)) << read_file(dir + "/error.log");
  }

  // Stops nginx, then spillway; whether spillway exited 0.
  bool stop() {
    kill(nginx->pid(), SIGTERM);
    kill(spillway->pid(), SIGTERM);
    int status = 0;
    waitpid(nginx->pid(), &status, 0);
    waitpid(spillway->pid(), &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  std::vector<std::string> app_lines() const {
    std::istringstream app_log(read_file(dir + "/app.log"));
    std::vector<std::string> lines;
    for (std::string line; std::getline(app_log, line);) {
      if (!line.empty()) lines.push_back(line);
    }
    return lines;
  }
};

TEST(Nginx, AuthRequestTurnsDenialsInto429WithRetryAfter) {
  // examples/nginx/spillway.yaml: the seed policy (/export 5 per minute per API key) trusting
  // nginx on loopback.
  NginxFront front("spillway.yaml", "e2e");
  const std::uint16_t nginx_port = front.nginx_port;
  const std::string& dir = front.dir;
  const std::map<std::string, std::string> headers = {{"X-API-Key", "e2e-key"}};
  // Five spellings that nginx passes on raw ($request_uri) and the application serves as
  // /export: each spends /export's budget (docs/SPEC.md §5.1).
  const std::string spellings[] = {"/export?page=0", "//export", "/Export/", "/%65xport?x=1",
                                   "/export;v=2"};
  for (int i = 0; i < 5; ++i) {
    testing::HttpReply ok = testing::http(nginx_port, "GET", spellings[i], "", headers);
    EXPECT_EQ(ok.status, 200) << spellings[i] << ": " << ok.body << read_file(dir + "/error.log");
    EXPECT_EQ(ok.body, "application\n");
    EXPECT_EQ(ok.header("x-ratelimit-remaining"), std::to_string(4 - i));
  }
  testing::HttpReply limited = testing::http(nginx_port, "GET", "/export", "", headers);
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_FALSE(limited.header("retry-after").empty());
  EXPECT_GE(std::atoi(limited.header("retry-after").c_str()), 1);
  EXPECT_NE(limited.body, "application\n");
  // Another endpoint of the same key is still admitted (the gateway has 60 per minute).
  EXPECT_EQ(testing::http(nginx_port, "GET", "/other", "", headers).status, 200);

  EXPECT_TRUE(front.stop()) << "spillway did not exit 0 on SIGTERM";
  // nginx is trusted: its X-Forwarded-For is believed, so nothing says it is not.
  EXPECT_EQ(read_file(dir + "/spillway.log").find("not in server.trusted_proxies"),
            std::string::npos)
      << read_file(dir + "/spillway.log");
  // The application saw exactly the admitted requests: 5 exports and 1 other.
  EXPECT_EQ(front.app_lines().size(), 6u);
}

// Shedding (examples/nginx/shedding.yaml: 10 a minute per client, 30 % kept for /checkout, which
// nginx's map marks critical): other requests pass until 7 are used, then nginx answers them 503
// (X-Spillway-Shed turned into a 503), while checkout passes up to the whole limit and is then
// refused as rate limited (429). A client's own X-Spillway-Priority is replaced by nginx's, and
// a path that only looks like checkout is not one.
TEST(Nginx, LowerPrioritiesAreShedWith503WhileCriticalOnesUseTheReserve) {
  NginxFront front("shedding.yaml", "shedding");
  const std::uint16_t port = front.nginx_port;
  const std::map<std::string, std::string> claims_critical = {{"X-Spillway-Priority", "critical"}};
  for (int i = 0; i < 7; ++i) {
    testing::HttpReply ok =
        testing::http(port, "GET", "/page/" + std::to_string(i), "", claims_critical);
    EXPECT_EQ(ok.status, 200) << i << ": " << ok.body << read_file(front.dir + "/error.log");
  }
  testing::HttpReply shed = testing::http(port, "GET", "/page/7", "", claims_critical);
  EXPECT_EQ(shed.status, 503) << "a client's own header must not buy the reserve: " << shed.body;
  EXPECT_NE(shed.body.find("shed"), std::string::npos) << shed.body;
  EXPECT_GE(std::atoi(shed.header("retry-after").c_str()), 1);
  // The map reads the path nginx normalised, by whole segments: none of these is checkout.
  for (const std::string path : {"/checkoutX", "/checkout/../page", "/x/..//checkout-y"}) {
    EXPECT_EQ(testing::http(port, "GET", path).status, 503) << path;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(testing::http(port, "GET", "/checkout/" + std::to_string(i)).status, 200) << i;
  }
  testing::HttpReply full = testing::http(port, "GET", "/checkout/3");
  EXPECT_EQ(full.status, 429) << "the whole limit used: a plain limit, not shedding";
  EXPECT_TRUE(front.stop());
  // The application saw the 7 pages and the 3 checkouts.
  EXPECT_EQ(front.app_lines().size(), 10u);
}

// Smoothing (examples/nginx/shaping.yaml: 5/s, burst 1, max_delay 2s): ten requests at once all
// pass, and reach the application one by one, 200 ms apart, each held by spillway for its turn.
// Asserted: all admitted; arrivals in the order of their delays; each no earlier than the burst
// was sent plus its delay (a lower bound); no two closer than the spacing less a tolerance for
// the scheduling of the one before. The spacing measured is printed, not asserted further.
TEST(Nginx, ABurstIsSpreadOutInsteadOfRefused) {
  NginxFront front("shaping.yaml", "shaping");
  using Wall = std::chrono::system_clock;
  const double sent =
      std::chrono::duration<double>(Wall::now().time_since_epoch()).count();  // as nginx's $msec
  std::vector<std::future<testing::HttpReply>> replies;
  for (int i = 0; i < 10; ++i) {
    replies.push_back(std::async(std::launch::async, [&front, i] {
      return testing::http(front.nginx_port, "GET", "/r" + std::to_string(i));
    }));
  }
  for (auto& reply : replies) {
    testing::HttpReply r = reply.get();
    EXPECT_EQ(r.status, 200) << r.body << read_file(front.dir + "/error.log");
  }
  struct Arrival {
    double at;           // s since the epoch, ms resolution
    std::int64_t delay;  // ms spillway held it
  };
  std::vector<Arrival> arrivals;
  for (const std::string& line : front.app_lines()) {
    std::istringstream fields(line);
    Arrival a{};
    std::string delay;
    fields >> a.at >> delay;
    a.delay = delay == "-" ? 0 : std::stoll(delay);
    arrivals.push_back(a);
  }
  ASSERT_EQ(arrivals.size(), 10u) << read_file(front.dir + "/app.log");
  std::sort(arrivals.begin(), arrivals.end(),
            [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
  std::string gaps;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    // Held no shorter than its delay, counted from a time after `sent` (1 ms: $msec's rounding).
    EXPECT_GE((arrivals[i].at - sent) * 1000 + 1, static_cast<double>(arrivals[i].delay)) << i;
    // The k-th to arrive waited about k turns of 200 ms (less the ms between the sends).
    EXPECT_LE(arrivals[i].delay, static_cast<std::int64_t>(200 * i)) << i;
    if (i == 0) continue;
    EXPECT_GE(arrivals[i].delay, arrivals[i - 1].delay) << "arrived out of turn: " << i;
    const double gap_ms = (arrivals[i].at - arrivals[i - 1].at) * 1000;
    gaps += " " + std::to_string(static_cast<int>(gap_ms));
    EXPECT_GE(gap_ms, 200 - 100) << "two requests reached the application " << gap_ms
                                 << " ms apart";
  }
  std::cout << "gaps between arrivals (ms):" << gaps << "\n";
  EXPECT_TRUE(front.stop());
}

}  // namespace
}  // namespace spillway
