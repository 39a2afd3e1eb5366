// Nothing secret in any log line: `spillway serve` (memory backend, tenant records, the admin API,
// the access log on) gets every endpoint with keys no other test uses — the decision endpoints,
// reservations, the admin API's records, resets and import, unknown routes, bad methods, the
// admin paths sent to the decision port, odd casing and doubled slashes, malformed requests,
// requests without a token — and none of those keys appears anywhere in what the process wrote
// (its stderr and stdout: the access log, the audit log, the refusals, every other line). Before,
// a path that was not exactly an admin endpoint's spelling was logged as sent, key included.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

constexpr char kLogSecrecyToken[] = "logsec-token-0123456789";

// A key no other test or process uses, with `n` in it: "zq7Secret<hex>n<n>".
class LogSecrets {
 public:
  LogSecrets() {
    std::random_device random;
    std::ostringstream out;
    out << "zq7Secret" << std::hex << random() << random();
    stem_ = out.str();
  }
  std::string next() {
    keys_.push_back(stem_ + "n" + std::to_string(keys_.size()));
    return keys_.back();
  }
  const std::vector<std::string>& all() const { return keys_; }
  const std::string& stem() const { return stem_; }

 private:
  std::string stem_;
  std::vector<std::string> keys_;
};

// Sends `bytes` as they are on a new connection and reads what comes back until it closes.
std::string raw_exchange(std::uint16_t port, const std::string& bytes) {
  testing::HttpConnection connection(port);
  connection.send_raw(bytes);
  std::string answer;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::recv(connection.fd(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  return answer;
}

// Sends `refused()` (a request without a token: 401) until the server's log holds one more
// refusal line than before; false after 10 s.
bool refusal_logged(const std::string& log, const std::function<int()>& refused) {
  const auto refusals = [&] {
    const std::string text = testing::read_file(log);
    std::size_t n = 0;
    for (std::size_t at = text.find("spillway admin: refused"); at != std::string::npos;
         at = text.find("spillway admin: refused", at + 1)) {
      ++n;
    }
    return n;
  };
  const std::size_t before = refusals();
  return testing::wait_until(
      [&] {
        EXPECT_EQ(refused(), 401);
        return refusals() > before;
      },
      std::chrono::seconds(10));
}

TEST(LogSecrecy, NoCallersKeyInAnyLogLineOnAnyEndpointOrSpelling) {
  const std::string dir = "/tmp/spillway_log_secrecy_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokens") << "ops " << kLogSecrecyToken << "\n";
  std::ofstream(dir + "/spillway.yaml") << "server:\n"
                                           "  admin_listen: 127.0.0.1:0\n"
                                           "  admin_token_file: "
                                        << dir
                                        << "/tokens\n"
                                           "  access_log: on\n"
                                           "layers:\n"
                                           "  - name: gateway\n"
                                           "    key: [api_key]\n"
                                           "    by_plan:\n"
                                           "      source: store\n"
                                           "      plans: {free: 100/min, pro: 1000/min}\n"
                                           "      default: free\n";
  const std::string log = dir + "/serve.log";
  testing::ServeProcess serve({"--config", dir + "/spillway.yaml"}, log);
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t admin = serve.admin_port();
  ASSERT_NE(admin, 0) << serve.log();
  const std::uint16_t port = serve.port();
  const std::map<std::string, std::string> bearer = {
      {"Authorization", std::string("Bearer ") + kLogSecrecyToken}};
  LogSecrets secrets;

  // Requests without a token first: the refusal line is written at most once a second, so each
  // spelling is sent (with a new key each time) until the server wrote its line. The first one
  // must be an odd spelling (the canonical one was masked before too).
  for (const char* spelling : {"/V1/TENANTS/", "//v1/tenants/", "/v1/tenants/"}) {
    EXPECT_TRUE(refusal_logged(log, [&] {
      return testing::http(admin, "GET", spelling + secrets.next()).status;
    })) << spelling;
  }
  EXPECT_EQ(testing::http(admin, "PUT", "/v1/tenants/" + secrets.next(), R"({"plan":"pro"})",
                          {{"Authorization", "Bearer wrong-token-0123456789"}})
                .status,
            401);

  // The decision port: keys in bodies and headers, and in paths that are no endpoint of it.
  EXPECT_EQ(
      testing::http(port, "POST", "/v1/check", R"({"api_key":")" + secrets.next() + "\"}").status,
      200);
  EXPECT_EQ(testing::http(port, "GET", "/v1/auth", "", {{"X-API-Key", secrets.next()}}).status,
            204);
  EXPECT_EQ(testing::http(port, "GET", "/v1/auth?api_key=" + secrets.next(), "",
                          {{"X-API-Key", secrets.next()}})
                .status,
            204);
  EXPECT_EQ(testing::http(port, "POST", "/v1/limit",
                          R"({"key":")" + secrets.next() + R"(","limit":5,"period":"1m"})")
                .status,
            200);
  const testing::HttpReply reserved = testing::http(
      port, "POST", "/v1/check", R"({"api_key":")" + secrets.next() + R"(","reserve":true})");
  EXPECT_EQ(reserved.status, 200) << reserved.body;
  EXPECT_GE(
      testing::http(port, "POST", "/v1/commit", R"({"reservation":"r-none","cost":1})").status,
      400);
  EXPECT_GE(testing::http(port, "POST", "/v1/cancel", R"({"reservation":"r-none"})").status, 400);
  for (const std::string& path :
       {"/v1/tenants/" + secrets.next(), "/V1/TENANTS/" + secrets.next(),
        "//v1/tenants/" + secrets.next(), "/" + secrets.next(), "/v1/" + secrets.next() + "/x",
        "/v1/check/" + secrets.next(), "/v1/tenants/" + secrets.next() + "/counters/gateway"}) {
    EXPECT_EQ(testing::http(port, "GET", path).status, 404) << path;
    EXPECT_EQ(testing::http(port, "DELETE", path).status, 404) << path;
  }
  EXPECT_EQ(
      testing::http(port, "PUT", "/v1/check", R"({"api_key":")" + secrets.next() + "\"}").status,
      405);
  // A method is whatever the client sends.
  EXPECT_EQ(testing::http(port, secrets.next(), "/v1/check").status, 405);
  EXPECT_EQ(testing::http(admin, secrets.next(), "/v1/tenants/x", "", bearer).status, 405);
  // ... and without a token, refused (the refusal line is written at most once a second).
  EXPECT_TRUE(refusal_logged(
      log, [&] { return testing::http(admin, secrets.next(), "/v1/tenants/x").status; }));
  // A request the parser refuses after reading its path.
  EXPECT_NE(raw_exchange(port, "GET /v1/tenants/" + secrets.next() +
                                   " HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
                .find("400"),
            std::string::npos);
  EXPECT_NE(raw_exchange(port, "GET /" + secrets.next() +
                                   " HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                   "zz\r\n\r\n")
                .find("400"),
            std::string::npos);

  // The admin port with a token: records, resets, the import, and every odd spelling.
  const std::string put_key = secrets.next();
  EXPECT_EQ(
      testing::http(admin, "PUT", "/v1/tenants/" + put_key, R"({"plan":"pro"})", bearer).status,
      200);
  EXPECT_EQ(testing::http(admin, "GET", "/v1/tenants/" + put_key, "", bearer).status, 200);
  EXPECT_EQ(
      testing::http(admin, "DELETE", "/v1/tenants/" + put_key + "/counters/gateway", "", bearer)
          .status,
      200);
  EXPECT_EQ(testing::http(admin, "DELETE", "/v1/tenants/" + put_key, "", bearer).status, 200);
  EXPECT_EQ(testing::http(admin, "GET", "/v1/tenants/" + secrets.next(), "", bearer).status, 404);
  EXPECT_EQ(testing::http(admin, "PATCH", "/v1/tenants/" + secrets.next(), "", bearer).status, 405);
  EXPECT_EQ(
      testing::http(admin, "PUT", "/v1/tenants/" + secrets.next() + "/counters/gateway", "", bearer)
          .status,
      405);
  EXPECT_EQ(
      testing::http(admin, "DELETE",
                    "/v1/tenants/" + secrets.next() + "/counters/" + secrets.next(), "", bearer)
          .status,
      400);
  EXPECT_EQ(
      testing::http(admin, "POST", "/v1/tenants/import",
                    secrets.next() + ",pro\n" + secrets.next() + ",free\n",
                    {{"Authorization", bearer.at("Authorization")}, {"Content-Type", "text/csv"}})
          .status,
      200);
  for (const std::string& path : {"/V1/TENANTS/" + secrets.next(), "//v1/tenants/" + secrets.next(),
                                  "/v1/TENANTS/" + secrets.next(), "/v1/tenants//" + secrets.next(),
                                  "/v1/tenants/" + secrets.next() + "/" + secrets.next(),
                                  "/" + secrets.next(), "/v1/tenants/%zz" + secrets.next()}) {
    const int status = testing::http(admin, "PUT", path, R"({"plan":"pro"})", bearer).status;
    EXPECT_TRUE(status == 404 || status == 400) << path << ": " << status;
  }

  ASSERT_EQ(serve.stop(SIGTERM), 0);  // the access log is flushed on the way out
  const std::string text = testing::read_file(log);
  // The log did see these requests (a test of an empty log proves nothing).
  for (const char* seen :
       {"path=/v1/check status=200", "path=/v1/auth status=204", "path=/v1/other status=404",
        "path=other status=404", "path=/v1/tenants/{key} status=200",
        "path=/v1/tenants/{key}/counters/{layer} status=200", "path=/v1/tenants/import status=200",
        "spillway admin: refused GET", "spillway audit: token=ops put tenant="}) {
    EXPECT_NE(text.find(seen), std::string::npos) << seen << " is not in the log:\n" << text;
  }
  ASSERT_GT(secrets.all().size(), 30u);
  for (const std::string& key : secrets.all()) {
    EXPECT_EQ(text.find(key), std::string::npos) << key << " is in the log:\n" << text;
  }
  EXPECT_EQ(text.find(secrets.stem()), std::string::npos) << "part of a key is in the log";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spillway
