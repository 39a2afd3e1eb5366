// The command line's HTTP client (see http_client.h).
#include "src/cli/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <memory>
#include <utility>

#include "src/core/text.h"

namespace spillway::cli {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// "10 s", or "200 ms" when not whole seconds.
std::string whole_seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

}  // namespace

Result<std::vector<tcp::endpoint>> resolve_endpoint(const HttpEndpoint& endpoint) {
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code error;
  const auto found = resolver.resolve(endpoint.host, endpoint.port, error);
  if (error) {
    return std::unexpected(
        Error{Errc::kUnavailable, "cannot resolve \"" + endpoint.host + "\": " + error.message()});
  }
  std::vector<tcp::endpoint> addresses;
  for (const auto& entry : found) addresses.push_back(entry.endpoint());
  return addresses;
}

void connect_within(tcp::socket& socket, const std::vector<tcp::endpoint>& addresses,
                    std::chrono::milliseconds timeout, std::function<void(std::string)> done) {
  struct Attempt {
    explicit Attempt(const tcp::socket::executor_type& executor) : timer(executor) {}
    asio::steady_timer timer;
    bool finished = false;   // the connect called back: the timer leaves the socket alone
    bool timed_out = false;  // the timer closed the socket
  };
  auto attempt = std::make_shared<Attempt>(socket.get_executor());
  attempt->timer.expires_after(timeout);
  attempt->timer.async_wait([attempt, &socket](const boost::system::error_code& error) {
    if (error || attempt->finished) return;
    attempt->timed_out = true;
    boost::system::error_code ignored;
    socket.close(ignored);  // the connect ends with operation_aborted
  });
  asio::async_connect(socket, addresses,
                      [attempt, timeout, done = std::move(done)](
                          const boost::system::error_code& error, const tcp::endpoint&) {
                        attempt->finished = true;
                        attempt->timer.cancel();
                        if (!error) return done("");
                        done(attempt->timed_out ? "no connection within " + whole_seconds(timeout)
                                                : error.message());
                      });
}

Result<HttpAnswer> http_request(const HttpEndpoint& endpoint,
                                const http::request<http::string_body>& request,
                                HttpTimeouts timeouts) {
  auto addresses = resolve_endpoint(endpoint);
  if (!addresses) return std::unexpected(addresses.error());
  try {
    asio::io_context io;
    boost::beast::tcp_stream stream(io);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 30);
    // connect, write, read: each step bounded (connect_within, then the stream's deadline);
    // io.run() returns when the last callback has run.
    std::string failure;
    const auto failed = [&](const boost::system::error_code& error) {
      failure = error == boost::beast::error::timeout
                    ? "no answer within " + whole_seconds(timeouts.answer)
                    : error.message();
    };
    connect_within(stream.socket(), *addresses, timeouts.connect, [&](std::string connect_failure) {
      if (!connect_failure.empty()) return void(failure = std::move(connect_failure));
      stream.expires_after(timeouts.answer);
      http::async_write(stream, request, [&](boost::system::error_code write_error, std::size_t) {
        if (write_error) return failed(write_error);
        http::async_read(stream, buffer, parser,
                         [&](boost::system::error_code read_error, std::size_t) {
                           if (read_error) failed(read_error);
                         });
      });
    });
    io.run();
    if (!failure.empty()) return std::unexpected(Error{Errc::kUnavailable, std::move(failure)});
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return HttpAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const boost::system::system_error& e) {
    return std::unexpected(Error{Errc::kUnavailable, e.code().message()});
  }
}

Result<HttpUrl> parse_http_url(std::string_view url, std::string_view default_port) {
  if (!url.starts_with("http://")) return invalid_argument("it must start with http://");
  std::string_view rest = url.substr(7);
  HttpUrl parsed;
  const std::size_t slash = rest.find('/');
  parsed.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const std::string_view authority = rest.substr(0, slash);
  std::size_t colon = authority.rfind(':');  // before the port, if there is one
  if (authority.starts_with('[')) {          // [IPv6]:port
    const std::size_t bracket = authority.find(']');
    if (bracket == std::string_view::npos) {
      return invalid_argument("it opens \"[\" and never closes it");
    }
    if (bracket + 1 < authority.size() && authority[bracket + 1] != ':') {
      return invalid_argument("after \"]\" only \":PORT\" may follow");
    }
    parsed.host = std::string(authority.substr(1, bracket - 1));
    colon = bracket + 1 < authority.size() ? bracket + 1 : std::string_view::npos;
  } else {
    parsed.host = std::string(authority.substr(0, colon));
  }
  if (parsed.host.empty()) return invalid_argument("it names no host");
  if (colon == std::string_view::npos) {
    if (default_port.empty()) return invalid_argument("it names no port");
    parsed.port = std::string(default_port);
  } else {
    parsed.port = std::string(authority.substr(colon + 1));
  }
  int port = 0;
  const auto [end, ec] =
      std::from_chars(parsed.port.data(), parsed.port.data() + parsed.port.size(), port);
  if (parsed.port.size() > 5 || ec != std::errc() ||
      end != parsed.port.data() + parsed.port.size() || port < 1 || port > 65535) {
    return invalid_argument("port " + quote_for_error(parsed.port, 16) +
                            " is not a number 1 to 65535");
  }
  return parsed;
}

}  // namespace spillway::cli
