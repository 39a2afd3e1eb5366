// End to end through a real nginx using examples/nginx/spillway.conf and spillway.yaml (the
// configuration in docs/server.md, ports changed): admitted requests reach the application; past
// the limit the client gets 429 with Retry-After and the application sees nothing more.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

using testing::free_port;
using testing::read_file;
using testing::wait_until;

TEST(Nginx, AuthRequestTurnsDenialsInto429WithRetryAfter) {
  const std::string dir = ::testing::TempDir() + "/nginx_e2e_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::uint16_t spillway_port = free_port(), nginx_port = free_port(), app_port = free_port();

  // spillway: examples/nginx/spillway.yaml, the seed policy (/export 5 per minute per API key)
  // trusting nginx on loopback; --listen gives this test's port.
  std::ofstream(dir + "/spillway.yaml")
      << read_file(std::string(SPILLWAY_SOURCE_DIR) + "/examples/nginx/spillway.yaml");
  const testing::ChildProcess spillway_process(
      {"spillway", "serve", "--config", dir + "/spillway.yaml", "--listen",
       "127.0.0.1:" + std::to_string(spillway_port)},
      dir + "/spillway.log", {.program = SPILLWAY_BINARY});
  const pid_t spillway = spillway_process.pid();
  ASSERT_TRUE(testing::accepts_connections(spillway_port)) << read_file(dir + "/spillway.log");

  // nginx: the example's server block with this test's ports, and the "application".
  std::string site = read_file(std::string(SPILLWAY_SOURCE_DIR) + "/examples/nginx/spillway.conf");
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
      << "  server {\n    listen 127.0.0.1:" << app_port << ";\n    access_log " << dir
      << "/app.log;\n    location / { return 200 'application\\n'; }\n  }\n"
      << site << "}\n";
  const testing::ChildProcess nginx_process({"nginx", "-c", dir + "/nginx.conf", "-p", dir},
                                            dir + "/nginx.out", {.program = "/usr/sbin/nginx"});
  const pid_t nginx = nginx_process.pid();
  ASSERT_TRUE(testing::accepts_connections(nginx_port)) << read_file(dir + "/error.log");

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

  kill(nginx, SIGTERM);
  kill(spillway, SIGTERM);
  int status = 0;
  waitpid(nginx, &status, 0);
  waitpid(spillway, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "spillway did not exit 0 on SIGTERM";
  // nginx is trusted: its X-Forwarded-For is believed, so nothing says it is not.
  EXPECT_EQ(read_file(dir + "/spillway.log").find("not in server.trusted_proxies"),
            std::string::npos)
      << read_file(dir + "/spillway.log");
  // The application saw exactly the admitted requests: 5 exports and 1 other.
  std::istringstream app_log(read_file(dir + "/app.log"));
  int app_requests = 0;
  for (std::string line; std::getline(app_log, line);) app_requests += !line.empty();
  EXPECT_EQ(app_requests, 6);
}

}  // namespace
}  // namespace spillway
