// src/cli/admin_client.h: a server that accepts but never answers is an error after the answer
// timeout, not a hang (an address that drops packets hung `spillway tenants` for the system's TCP
// timeout); a closed port is the system's words. The silent server is a loopback listener in
// this process that accepts and reads nothing.
#include "src/cli/admin_client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>

namespace spillway::cli {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(AdminClient, ASilentServerIsAnErrorAfterTheAnswerTimeout) {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  const AdminEndpoint endpoint{"127.0.0.1", std::to_string(silent.local_endpoint().port())};
  // The kernel completes the connection (the backlog) without an accept(): nothing answers.
  const Result<AdminAnswer> answer =
      admin_request(endpoint, "t0ken", boost::beast::http::verb::get, "/v1/tenants", "",
                    "application/json", AdminTimeouts{.connect = 5000ms, .answer = 200ms});
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code, Errc::kUnavailable);
  EXPECT_EQ(answer.error().message,
            "admin API at 127.0.0.1:" + endpoint.port + ": no answer within 200 ms");
}

TEST(AdminClient, AClosedPortIsTheSystemsWords) {
  std::string port;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor closed(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = std::to_string(closed.local_endpoint().port());
  }
  const Result<AdminAnswer> answer =
      admin_request({"127.0.0.1", port}, "t0ken", boost::beast::http::verb::get, "/v1/tenants");
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().message, "admin API at 127.0.0.1:" + port + ": Connection refused");
}

}  // namespace
}  // namespace spillway::cli
