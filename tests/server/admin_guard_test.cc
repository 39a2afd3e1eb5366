// The admin port cannot be held, and revocation is immediate (issue 32, section 3):
// - HttpPeerCap (unit): the HTTP server's per-peer connection cap, in this process;
// - AdminGuard (the spillway binary): an idle flood from one address leaves the operator's
//   authorised request served; idle and trickling admin connections close within the decision
//   port's 5 s read deadline; a refused token closes its connection; an authorised import still
//   gets its longer body deadline; a token removed from admin_token_file is refused after SIGHUP,
//   a bad token file keeps the tokens in force; the warnings of serve and validate about a
//   non-loopback admin listener and secret files readable by others.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/config/config.h"
#include "src/server/http_server.h"
#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kAdminGuardToken = "guard-tok-7c1e9a3f5b";
constexpr std::string_view kAdminGuardSpare = "guard-spare-4d2b8e6a0c";

// No read on a test socket waits longer than this (a server that never answers fails the test
// instead of hanging it).
void admin_guard_bound_reads(int fd, std::chrono::seconds limit) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count());
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

// Whether the server closed `fd` (end of stream or reset), without waiting.
bool admin_guard_closed(int fd) {
  char byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n == 0) return true;
  if (n > 0) {  // a response: read past it to see the end
    char chunk[4096];
    while (::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT) > 0) {
    }
    return ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
  }
  return errno != EAGAIN && errno != EWOULDBLOCK;
}

// A directory of one test's files, removed at the end of the test.
class AdminGuardDir {
 public:
  explicit AdminGuardDir(const std::string& name)
      : dir_("/tmp/spillway_admin_guard_" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write_tokens("ops " + std::string(kAdminGuardToken) + "\n");
  }
  ~AdminGuardDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  AdminGuardDir(const AdminGuardDir&) = delete;
  AdminGuardDir& operator=(const AdminGuardDir&) = delete;

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string tokens() const { return path("tokens"); }
  // Replaces the token file (owner-only, as an operator keeps it).
  void write_tokens(const std::string& text) const {
    std::ofstream(tokens(), std::ios::trunc) << text;
    ::chmod(tokens().c_str(), 0600);
  }
  // A config with the admin API on `admin_listen` and `extra` lines appended to `server:`.
  std::string config(const std::string& extra = "",
                     const std::string& admin_listen = "127.0.0.1:0") const {
    const std::string file = path("config.yaml");
    std::ofstream(file) << "server:\n  access_log: false\n  admin_listen: \"" << admin_listen
                        << "\"\n  admin_token_file: " << tokens() << "\n"
                        << extra
                        << "layers:\n  - name: gateway\n    key: [api_key]\n    by_plan:\n"
                           "      source: store\n      plans: {free: 3/min, pro: 100/min}\n"
                           "      default: free\n";
    return file;
  }

 private:
  std::string dir_;
};

// `spillway serve --config FILE` with its admin port read from its log.
class AdminGuardServer {
 public:
  AdminGuardServer(const AdminGuardDir& dir, const std::string& config)
      : process_({"--config", config}, dir.path("serve.log")) {}

  bool ready() {
    if (!process_.ready()) return false;
    admin_port_ = process_.admin_port();
    return admin_port_ != 0;
  }
  std::uint16_t admin_port() const { return admin_port_; }
  std::string log() const { return process_.log(); }
  void hangup() const { ::kill(process_.pid(), SIGHUP); }

  // GET /v1/tenants from `source` with `token`, on a fresh connection.
  testing::HttpReply list(std::string_view token, const char* source = nullptr) const {
    testing::HttpConnection connection(admin_port_, source);
    admin_guard_bound_reads(connection.fd(), 30s);
    return connection.request("GET", "/v1/tenants", "",
                              {{"Authorization", "Bearer " + std::string(token)}});
  }

 private:
  testing::ServeProcess process_;
  std::uint16_t admin_port_ = 0;
};

// ---- the HTTP server's per-peer cap (in this process) -------------------------------------

std::unique_ptr<server::HttpServer> peer_cap_server(std::size_t per_peer, bool evict = false,
                                                    std::size_t max_connections = 10000) {
  server::HttpServerOptions options;
  options.evict_idle_when_full = evict;
  options.max_connections = max_connections;
  options.host = "127.0.0.1";
  options.port = 0;
  options.threads = 1;
  options.max_connections_per_peer = per_peer;
  // Long enough that no test's connection is closed for its silence while the test still counts
  // it as open (a loaded, sanitized run can stall for seconds).
  options.read_timeout = std::chrono::seconds(60);
  options.access_log = [](std::string_view) {};
  auto started = server::HttpServer::start(
      options, [](server::HttpRequest request, server::Responder respond) {
        server::HttpResponse response;
        response.body = "peer=" + request.peer_address;
        respond(std::move(response));
      });
  EXPECT_TRUE(started.has_value()) << (started ? "" : started.error().message);
  return started ? std::move(*started) : nullptr;
}

TEST(HttpPeerCap, OnePeerHoldsAtMostItsCapAndAnotherPeerIsServed) {
  auto server = peer_cap_server(3);
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<testing::HttpConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<testing::HttpConnection>(server->port(), "127.0.0.2"));
  }
  ASSERT_TRUE(testing::wait_until([&] { return server->open_connections() == 3; }));
  // A fourth from the same address: 503, closed, not counted.
  testing::HttpConnection fourth(server->port(), "127.0.0.2");
  admin_guard_bound_reads(fourth.fd(), 30s);
  const testing::HttpReply refused = fourth.read_reply();
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find("too many connections from this address"), std::string::npos)
      << refused.body;
  // Another address is served, and so is the first one once it closes a connection.
  testing::HttpConnection other(server->port(), "127.0.0.3");
  admin_guard_bound_reads(other.fd(), 30s);
  const testing::HttpReply served = other.request("GET", "/x");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.body, "peer=127.0.0.3");
  held.pop_back();
  ASSERT_TRUE(testing::wait_until([&] { return server->open_connections() == 3; }));
  testing::HttpConnection again(server->port(), "127.0.0.2");
  admin_guard_bound_reads(again.fd(), 30s);
  EXPECT_EQ(again.request("GET", "/x").status, 200);
}

TEST(HttpPeerCap, WhenFullTheOldestIdleConnectionMakesRoomAndABusyOneDoesNot) {
  auto server = peer_cap_server(0, true, 3);
  ASSERT_TRUE(server);
  // The first has sent a request (kept alive): it is never evicted.
  testing::HttpConnection busy(server->port());
  admin_guard_bound_reads(busy.fd(), 30s);
  ASSERT_EQ(busy.request("GET", "/x").status, 200);
  testing::HttpConnection idle_first(server->port(), "127.0.0.2");
  ASSERT_TRUE(testing::wait_until([&] { return server->open_connections() == 2; }));
  testing::HttpConnection idle_second(server->port(), "127.0.0.3");
  ASSERT_TRUE(testing::wait_until([&] { return server->open_connections() == 3; }));
  testing::HttpConnection late(server->port(), "127.0.0.4");
  admin_guard_bound_reads(late.fd(), 30s);
  EXPECT_EQ(late.request("GET", "/x").status, 200);
  EXPECT_TRUE(testing::wait_until([&] { return admin_guard_closed(idle_first.fd()); }, 10s));
  EXPECT_FALSE(admin_guard_closed(idle_second.fd()));
  EXPECT_EQ(busy.request("GET", "/x").status, 200);
}

TEST(HttpPeerCap, ZeroMeansNoCap) {
  auto server = peer_cap_server(0);
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<testing::HttpConnection>> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<testing::HttpConnection>(server->port(), "127.0.0.2"));
  }
  testing::HttpConnection last(server->port(), "127.0.0.2");
  admin_guard_bound_reads(last.fd(), 30s);
  EXPECT_EQ(last.request("GET", "/x").status, 200);
}

// ---- the caps in the config ----------------------------------------------------------------

TEST(PeerCapConfig, TheCapsAreReadWithTheirDefaultsAndRanges) {
  auto defaults = policy::parse_config("");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->server.max_connections_per_peer, 0u);
  EXPECT_EQ(defaults->server.admin_max_connections_per_peer, 8u);
  auto set = policy::parse_config(
      "server:\n  max_connections_per_peer: 200\n  admin_max_connections_per_peer: 2\n");
  ASSERT_TRUE(set.has_value()) << set.error().message;
  EXPECT_EQ(set->server.max_connections_per_peer, 200u);
  EXPECT_EQ(set->server.admin_max_connections_per_peer, 2u);
  for (const char* bad :
       {"server:\n  max_connections_per_peer: -1\n", "server:\n  max_connections_per_peer: 10001\n",
        "server:\n  admin_max_connections_per_peer: 0\n",
        "server:\n  admin_max_connections_per_peer: 65\n",
        "server:\n  admin_max_connections_per_peer: many\n"}) {
    auto refused = policy::parse_config(bad);
    ASSERT_FALSE(refused.has_value()) << bad;
    EXPECT_NE(refused.error().message.find("line 2"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("max_connections_per_peer"), std::string::npos)
        << refused.error().message;
  }
}

// ---- the admin listener of `spillway serve` -----------------------------------------------

TEST(AdminGuard, AnIdleFloodFromOnePeerLeavesTheOperatorServed) {
  AdminGuardDir dir("flood");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  // 64 idle connections (every admin slot) from 127.0.0.2, accepted before the operator's.
  std::vector<std::unique_ptr<testing::HttpConnection>> flood;
  for (int i = 0; i < 64; ++i) {
    flood.push_back(std::make_unique<testing::HttpConnection>(server.admin_port(), "127.0.0.2"));
    admin_guard_bound_reads(flood.back()->fd(), 30s);
  }
  const testing::HttpReply operator_reply = server.list(kAdminGuardToken, "127.0.0.1");
  EXPECT_EQ(operator_reply.status, 200) << operator_reply.body;
  EXPECT_NE(operator_reply.body.find("\"tenants\""), std::string::npos) << operator_reply.body;
  // The flood's 9th and later were refused at once (8 per address by default).
  const testing::HttpReply over = flood.back()->read_reply();
  EXPECT_EQ(over.status, 503);
  EXPECT_NE(over.body.find("too many connections from this address"), std::string::npos)
      << over.body;
}

TEST(AdminGuard, AnIdleFloodFromManyAddressesLeavesTheOperatorServed) {
  AdminGuardDir dir("spread");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  // 8 addresses x 8 (each address's cap): all 64 admin slots, idle.
  std::vector<std::unique_ptr<testing::HttpConnection>> flood;
  std::vector<std::string> sources;
  for (int a = 2; a <= 9; ++a) sources.push_back("127.0.0." + std::to_string(a));
  for (const std::string& source : sources) {
    for (int i = 0; i < 8; ++i) {
      flood.push_back(
          std::make_unique<testing::HttpConnection>(server.admin_port(), source.c_str()));
    }
  }
  const testing::HttpReply operator_reply = server.list(kAdminGuardToken, "127.0.0.1");
  EXPECT_EQ(operator_reply.status, 200) << operator_reply.body;
  // The flood's oldest idle connection made room.
  EXPECT_TRUE(testing::wait_until([&] { return admin_guard_closed(flood.front()->fd()); }, 10s));
}

TEST(AdminGuard, IdleAndTricklingConnectionsCloseWithinTheReadDeadline) {
  AdminGuardDir dir("idle");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  testing::HttpConnection idle(server.admin_port());
  testing::HttpConnection trickle(server.admin_port(), "127.0.0.3");
  trickle.send_raw("GET /v1/tenants HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  // 5 s is the deadline; 30 s only turns a connection that is never closed into a failure.
  const auto start = std::chrono::steady_clock::now();
  bool idle_closed = false;
  bool trickle_closed = false;
  while (std::chrono::steady_clock::now() - start < 30s && !(idle_closed && trickle_closed)) {
    if (!trickle_closed && ::send(trickle.fd(), "a", 1, MSG_NOSIGNAL) != 1) trickle_closed = true;
    std::this_thread::sleep_for(500ms);  // real time: a slow client's pace, against the server's
    idle_closed = idle_closed || admin_guard_closed(idle.fd());
    trickle_closed = trickle_closed || admin_guard_closed(trickle.fd());
  }
  EXPECT_TRUE(idle_closed) << "an idle admin connection was still open after 30 s";
  EXPECT_TRUE(trickle_closed) << "a header sent a byte every 0.5 s was still read after 30 s";
}

TEST(AdminGuard, AWrongTokenClosesItsConnection) {
  AdminGuardDir dir("wrong");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  testing::HttpConnection connection(server.admin_port());
  admin_guard_bound_reads(connection.fd(), 10s);
  const testing::HttpReply refused = connection.request(
      "GET", "/v1/tenants", "", {{"Authorization", "Bearer not-the-token-at-all"}});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.header("connection"), "close");
  EXPECT_TRUE(testing::wait_until([&] { return admin_guard_closed(connection.fd()); }, 10s));
}

TEST(AdminGuard, AnAuthorisedBodyMayTakeLongerThanTheReadDeadline) {
  AdminGuardDir dir("import");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  testing::HttpConnection connection(server.admin_port());
  admin_guard_bound_reads(connection.fd(), 30s);
  const std::string body = "{\"key\":\"slow-import-1\",\"plan\":\"pro\"}\n";
  connection.send_raw("POST /v1/tenants/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      std::string(kAdminGuardToken) +
                      "\r\nContent-Type: application/x-ndjson\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n");
  // Real time: past the other process's 5 s read deadline (its own clock).
  std::this_thread::sleep_for(6s);
  connection.send_raw(body);
  const testing::HttpReply reply = connection.read_reply();
  EXPECT_EQ(reply.status, 200) << reply.body;
}

// ---- revocation: the token file reloaded on SIGHUP ----------------------------------------

TEST(AdminGuard, ATokenRemovedFromTheFileIsRefusedAfterSighup) {
  AdminGuardDir dir("revoke");
  dir.write_tokens("ops " + std::string(kAdminGuardToken) + "\nleaver " +
                   std::string(kAdminGuardSpare) + "\n");
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  EXPECT_TRUE(testing::wait_until([&] {
    return server.log().find("admin tokens: 2 in force") != std::string::npos;
  })) << server.log();
  ASSERT_EQ(server.list(kAdminGuardSpare).status, 200);

  dir.write_tokens("ops " + std::string(kAdminGuardToken) + "\n");
  server.hangup();
  EXPECT_TRUE(testing::wait_until(
      [&] {
        return server.log().find("reloaded from " + dir.tokens() + ": 1 in force") !=
               std::string::npos;
      },
      30s))
      << server.log();
  const testing::HttpReply revoked = server.list(kAdminGuardSpare);
  EXPECT_EQ(revoked.status, 401) << revoked.body;
  EXPECT_EQ(server.list(kAdminGuardToken).status, 200);

  // A token file that does not load keeps the tokens in force and says why.
  dir.write_tokens("ops short\n");
  server.hangup();
  ASSERT_TRUE(testing::wait_until(
      [&] { return server.log().find("keeping the 1 in force") != std::string::npos; }, 30s))
      << server.log();
  EXPECT_NE(server.log().find("at least 16 bytes"), std::string::npos) << server.log();
  EXPECT_EQ(server.list(kAdminGuardToken).status, 200);
  EXPECT_EQ(server.list("ops short").status, 401);
  EXPECT_EQ(server.list(kAdminGuardSpare).status, 401);

  // Added back: in force again at the next SIGHUP.
  dir.write_tokens("ops " + std::string(kAdminGuardToken) + "\nleaver " +
                   std::string(kAdminGuardSpare) + "\n");
  server.hangup();
  ASSERT_TRUE(testing::wait_until(
      [&] {
        return server.log().find("reloaded from " + dir.tokens() + ": 2 in force") !=
               std::string::npos;
      },
      30s))
      << server.log();
  EXPECT_EQ(server.list(kAdminGuardSpare).status, 200);
  // No token in any log line.
  const std::string log = server.log();
  EXPECT_EQ(log.find(kAdminGuardToken), std::string::npos) << log;
  EXPECT_EQ(log.find(kAdminGuardSpare), std::string::npos) << log;
}

// ---- warnings: an admin listener off loopback, secret files others can read ---------------

TEST(AdminGuard, ValidateWarnsOfAnAdminListenerOffLoopbackAndOpenSecretFiles) {
  AdminGuardDir dir("warn");
  const std::string secret = dir.path("secret");
  std::ofstream(secret) << "0123456789abcdef0123456789abcdef\n";
  ::chmod(secret.c_str(), 0640);
  ::chmod(dir.tokens().c_str(), 0644);
  const std::string backend =
      "backend:\n  key_hash: hmac-sha256\n  key_secret_file: " + secret + "\n";
  std::string config = dir.config("", "0.0.0.0:9999");
  std::ofstream(config, std::ios::app) << backend;
  const testing::BinaryRun warned = testing::run_binary("validate " + config);
  EXPECT_EQ(warned.status, 0) << warned.err;
  EXPECT_NE(warned.err.find("warning: line 3: server.admin_listen: 0.0.0.0 is not a loopback "
                            "address and the admin listener has no TLS"),
            std::string::npos)
      << warned.err;
  EXPECT_NE(warned.err.find("warning: line 4: server.admin_token_file: mode 0644: group and "
                            "others can read it (chmod 600 " +
                            dir.tokens() + ")"),
            std::string::npos)
      << warned.err;
  EXPECT_NE(warned.err.find("backend.key_secret_file: mode 0640: its group can read it"),
            std::string::npos)
      << warned.err;
  EXPECT_EQ(warned.err.find("0123456789abcdef"), std::string::npos) << warned.err;

  // Loopback ([::1], localhost, 127.x) and owner-only files: no warning.
  ::chmod(secret.c_str(), 0600);
  ::chmod(dir.tokens().c_str(), 0400);
  for (const char* listen : {"127.0.0.2:9999", "[::1]:9999", "localhost:9999"}) {
    config = dir.config("", listen);
    std::ofstream(config, std::ios::app) << backend;
    const testing::BinaryRun quiet = testing::run_binary("validate " + config);
    EXPECT_EQ(quiet.status, 0) << quiet.err;
    EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << listen << ": " << quiet.err;
  }
}

TEST(AdminGuard, ServeWarnsAtStartOfATokenFileOthersCanRead) {
  AdminGuardDir dir("serve_warn");
  ::chmod(dir.tokens().c_str(), 0604);
  AdminGuardServer server(dir, dir.config());
  ASSERT_TRUE(server.ready()) << server.log();
  EXPECT_NE(server.log().find("spillway serve: warning: " + dir.path("config.yaml") +
                              ": line 4: server.admin_token_file: mode 0604: others can read it"),
            std::string::npos)
      << server.log();
}

}  // namespace
}  // namespace spillway
