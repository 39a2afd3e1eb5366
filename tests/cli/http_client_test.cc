// The command line's one HTTP client (src/cli/http_client.h): an answer's status and body, and
// what a step that failed says. The servers are loopback listeners in this process.
#include "src/cli/http_client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <thread>

namespace spillway::cli {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

TEST(HttpClient, AnAnswerIsItsStatusAndBody) {
  asio::io_context server_io;
  tcp::acceptor acceptor(server_io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string port = std::to_string(acceptor.local_endpoint().port());
  std::string received;
  std::thread server([&] {
    tcp::socket socket(server_io);
    acceptor.accept(socket);
    asio::streambuf head;
    asio::read_until(socket, head, "\r\n\r\n");
    received.assign(asio::buffers_begin(head.data()), asio::buffers_end(head.data()));
    asio::write(socket, asio::buffer(std::string_view(
                            "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n"
                            "\r\nok")));
  });
  http::request<http::string_body> request(http::verb::get, "/v1/x", 11);
  request.set(http::field::host, "127.0.0.1");
  const Result<HttpAnswer> answer = http_request({"127.0.0.1", port}, request);
  server.join();
  ASSERT_TRUE(answer.has_value()) << answer.error().message;
  EXPECT_EQ(answer->status, 201);
  EXPECT_EQ(answer->body, "ok");
  EXPECT_TRUE(received.starts_with("GET /v1/x HTTP/1.1\r\n")) << received;
}

TEST(HttpClient, AClosedPortIsTheSystemsWords) {
  std::string port;
  {
    asio::io_context io;
    tcp::acceptor closed(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = std::to_string(closed.local_endpoint().port());
  }
  const Result<std::vector<tcp::endpoint>> addresses = resolve_endpoint({"127.0.0.1", port});
  ASSERT_TRUE(addresses.has_value()) << addresses.error().message;
  asio::io_context io;
  tcp::socket socket(io);
  std::string failure = "not called";
  connect_within(socket, *addresses, 5000ms, [&](std::string words) { failure = words; });
  io.run();
  EXPECT_EQ(failure, "Connection refused");

  http::request<http::string_body> request(http::verb::get, "/", 11);
  const Result<HttpAnswer> answer = http_request({"127.0.0.1", port}, request);
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().code, Errc::kUnavailable);
  EXPECT_EQ(answer.error().message, "Connection refused");
}

TEST(HttpClient, ASilentServerIsNoAnswerWithinTheAnswerTimeout) {
  asio::io_context io;
  tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  http::request<http::string_body> request(http::verb::get, "/", 11);
  const Result<HttpAnswer> answer =
      http_request({"127.0.0.1", std::to_string(silent.local_endpoint().port())}, request,
                   HttpTimeouts{.connect = 5000ms, .answer = 1500ms});
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().message, "no answer within 1500 ms");
}

}  // namespace
}  // namespace spillway::cli
