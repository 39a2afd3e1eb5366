// End to end: a real `spillway serve` behind a real HAProxy or nginx, answering `/v1/auth` with
// an edge layer of 3 per minute keyed by the client's IP and trusting only the proxy
// (127.0.0.1/32). The client connects to the proxy from 127.0.0.2, so the address the proxy
// reports is an untrusted one, and forges a different X-Forwarded-For, X-Real-IP and Forwarded on
// every request. Whatever it forges, it gets 3 of 6 requests admitted; a second client
// (127.0.0.3) behind the same proxy still gets its own budget, so the key is the client's address,
// neither a forged one nor the proxy's (docs/SPEC.md §6).
//
// A proxy that cannot start fails the test with its log.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

using testing::free_port;
using testing::read_file;

using Child = testing::ChildProcess;
using testing::accepts_connections;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
  EXPECT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  return dir;
}

// spillway with the edge layer, trusting the proxy on 127.0.0.1 only.
std::vector<std::string> spillway_args(const std::string& dir, const std::string& header) {
  std::ofstream(dir + "/spillway.yaml") << "server:\n"
                                        << "  trusted_proxies: [127.0.0.1/32]\n"
                                        << "  client_ip_header: " << header << "\n"
                                        << "  access_log: off\n"
                                        << "layers:\n"
                                        << "  - name: edge\n"
                                        << "    key: [ip]\n"
                                        << "    limit: 3/min\n";
  return {"--config", dir + "/spillway.yaml"};
}

// One /v1/auth through the proxy from `source`, forging every client-address header with a value
// of its own (`n` picks it).
testing::HttpReply forged_auth(std::uint16_t proxy_port, const char* source, int n) {
  const std::string forged = "198.51.100." + std::to_string(n);
  testing::HttpConnection connection(proxy_port, source);
  return connection.request(
      "GET", "/v1/auth", "",
      {{"X-Forwarded-For", forged}, {"X-Real-IP", forged}, {"Forwarded", "for=" + forged}});
}

// The client from 127.0.0.2 forges six times: only the first three pass. Then a client from
// 127.0.0.3 passes: it has its own budget.
void expect_keyed_by_the_real_client(std::uint16_t proxy_port, const std::string& logs) {
  int admitted = 0;
  for (int i = 0; i < 6; ++i) {
    const testing::HttpReply reply = forged_auth(proxy_port, "127.0.0.2", i);
    ASSERT_TRUE(reply.status == 204 || reply.status == 403)
        << "request " << i << ": " << reply.status << " " << reply.body << "\n"
        << logs;
    admitted += reply.status == 204;
    EXPECT_EQ(reply.status, i < 3 ? 204 : 403) << "request " << i;
  }
  EXPECT_EQ(admitted, 3) << "a client forging its address headers stepped around the edge limit";
  EXPECT_EQ(forged_auth(proxy_port, "127.0.0.3", 0).status, 204)
      << "another client behind the same proxy shares a budget: keyed by the proxy, not the client";
}

TEST(ProxyHeaders, HaproxyForwardforLineAfterAForgedOneIsTheClient) {
  const std::string dir = fresh_dir("proxy_haproxy");
  testing::ServeProcess spillway(spillway_args(dir, "x-forwarded-for"), dir + "/spillway.log");
  ASSERT_TRUE(spillway.ready()) << spillway.log();

  // `option forwardfor` adds its own X-Forwarded-For line after whatever the client sent.
  const std::uint16_t proxy_port = free_port();
  std::ofstream(dir + "/haproxy.cfg")
      << "global\n  maxconn 64\n"
      << "defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n"
      << "  timeout server 10s\n"
      << "frontend edge\n  bind 127.0.0.1:" << proxy_port << "\n  option forwardfor\n"
      << "  default_backend spillway\n"
      << "backend spillway\n  server spillway 127.0.0.1:" << spillway.port() << "\n";
  Child haproxy({"/usr/sbin/haproxy", "-db", "-f", dir + "/haproxy.cfg"}, dir + "/haproxy.log");
  ASSERT_TRUE(accepts_connections(proxy_port)) << "haproxy did not start:\n"
                                               << read_file(dir + "/haproxy.log");

  expect_keyed_by_the_real_client(proxy_port, read_file(dir + "/haproxy.log") + spillway.log());
}

// How nginx tells spillway who the client is, and the setting that names that header.
struct NginxSetup {
  const char* name;
  const char* directives;  // inside the location that proxies to spillway
  const char* client_ip_header;
};

void PrintTo(const NginxSetup& setup, std::ostream* out) { *out << setup.name; }

class NginxHeaders : public ::testing::TestWithParam<NginxSetup> {};

TEST_P(NginxHeaders, ForgedHeadersDoNotRotatePastTheEdgeLayer) {
  const NginxSetup& setup = GetParam();
  const std::string dir = fresh_dir(std::string("proxy_nginx_") + setup.name);
  testing::ServeProcess spillway(spillway_args(dir, setup.client_ip_header), dir + "/spillway.log");
  ASSERT_TRUE(spillway.ready()) << spillway.log();

  const std::uint16_t proxy_port = free_port();
  std::ofstream(dir + "/nginx.conf")
      << "daemon off;\nworker_processes 1;\npid " << dir << "/nginx.pid;\nerror_log " << dir
      << "/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path " << dir
      << ";\n  proxy_temp_path " << dir << ";\n  fastcgi_temp_path " << dir
      << ";\n  uwsgi_temp_path " << dir << ";\n  scgi_temp_path " << dir << ";\n"
      << "  server {\n    listen 127.0.0.1:" << proxy_port << ";\n    location / {\n"
      << "      proxy_pass http://127.0.0.1:" << spillway.port() << ";\n      " << setup.directives
      << "\n    }\n  }\n}\n";
  Child nginx({"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-p", dir}, dir + "/nginx.log");
  ASSERT_TRUE(accepts_connections(proxy_port))
      << "nginx did not start:\n"
      << read_file(dir + "/nginx.log") << read_file(dir + "/error.log");

  expect_keyed_by_the_real_client(proxy_port, read_file(dir + "/error.log") + spillway.log());
}

INSTANTIATE_TEST_SUITE_P(
    Setups, NginxHeaders,
    ::testing::Values(
        // The client's X-Forwarded-For, then nginx's $remote_addr, on one line.
        NginxSetup{"x_forwarded_for",
                   "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
                   "x-forwarded-for"},
        // nginx sets X-Real-IP only; the client's X-Forwarded-For goes through untouched and
        // must not be believed.
        NginxSetup{"x_real_ip", "proxy_set_header X-Real-IP $remote_addr;", "x-real-ip"},
        // RFC 7239: the client's Forwarded, then nginx's element.
        NginxSetup{"forwarded", "proxy_set_header Forwarded \"$http_forwarded, for=$remote_addr\";",
                   "forwarded"}),
    [](const ::testing::TestParamInfo<NginxSetup>& setup) {
      return std::string(setup.param.name);
    });

}  // namespace
}  // namespace spillway
