#include "src/cli/admin_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cctype>

namespace spillway::cli {
namespace http = boost::beast::http;
namespace json = boost::json;

Result<AdminEndpoint> parse_admin_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return invalid_argument("--admin " + url + ": expected http://host:port (server.admin_listen)");
  }
  std::string rest = url.substr(kScheme.size());
  if (const std::size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return invalid_argument("--admin " + url + ": expected http://host:port");
  }
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return AdminEndpoint{host, rest.substr(colon + 1)};
}

namespace {

std::string whole_seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

}  // namespace

Result<AdminAnswer> admin_request(const AdminEndpoint& endpoint, const std::string& token,
                                  http::verb method, const std::string& target, std::string body,
                                  const std::string& content_type, AdminTimeouts timeouts) {
  const std::string where = "admin API at " + endpoint.host + ":" + endpoint.port + ": ";
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    const auto addresses = resolver.resolve(endpoint.host, endpoint.port);
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, endpoint.host);
    req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty() || method == http::verb::put || method == http::verb::post) {
      req.set(http::field::content_type, content_type);
      req.body() = std::move(body);
      req.prepare_payload();
    }
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 30);
    // connect, write, read: each step bounded by the stream's deadline; io.run() returns when
    // the last callback has run.
    boost::beast::tcp_stream stream(io);
    boost::system::error_code failure;
    bool connected = false;
    stream.expires_after(timeouts.connect);
    stream.async_connect(addresses, [&](boost::system::error_code connect_ec, const auto&) {
      if (connect_ec) return void(failure = connect_ec);
      connected = true;
      stream.expires_after(timeouts.answer);
      http::async_write(stream, req, [&](boost::system::error_code write_ec, std::size_t) {
        if (write_ec) return void(failure = write_ec);
        http::async_read(
            stream, buffer, parser,
            [&](boost::system::error_code read_ec, std::size_t) { failure = read_ec; });
      });
    });
    io.run();
    if (failure == boost::beast::error::timeout) {
      return std::unexpected(
          Error{Errc::kUnavailable,
                where + (connected ? "no answer within " + whole_seconds(timeouts.answer)
                                   : "no connection within " + whole_seconds(timeouts.connect))});
    }
    if (failure) return std::unexpected(Error{Errc::kUnavailable, where + failure.message()});
    boost::system::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    return AdminAnswer{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const boost::system::system_error& e) {
    return std::unexpected(Error{Errc::kUnavailable, where + e.code().message()});
  }
}

std::string percent_encoded(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string admin_error_message(const AdminAnswer& answer) {
  boost::system::error_code ec;
  json::value value = json::parse(answer.body, ec);
  if (!ec && value.is_object()) {
    if (const json::value* error = value.as_object().if_contains("error");
        error != nullptr && error->is_string()) {
      return std::string(error->as_string());
    }
  }
  return answer.body;
}

}  // namespace spillway::cli
