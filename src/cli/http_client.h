// The command line's HTTP/1.1 client, in one place for every command that speaks HTTP:
// `spillway tenants` and `spillway inspect --admin` (through src/cli/admin_client.h) send one
// request per connection with http_request; `spillway bench --http` (src/cli/http_load.cc)
// resolves and connects with resolve_endpoint and connect_within, and keeps its own keep-alive
// loop (a load generator: no allocation per request there).
//
// Timeouts (HttpTimeouts): 10 s to connect (an address that drops packets would otherwise hang
// for the system's TCP timeout, minutes), then 300 s to send and be answered (an import of a
// large file is answered once every record is stored). Errors (kUnavailable) say which step
// failed: `cannot resolve "HOST": <the system's words>`, the system's words of a connect, send
// or read ("Connection refused"), "no connection within 10 s", "no answer within 300 s". The
// caller puts what it spoke to in front ("admin API at HOST:PORT: ").
//
// http_request blocks the calling thread (an io_context of its own); connect_within runs on the
// socket's executor and calls back there. No shared state: thread-safe.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"

namespace spillway::cli {

struct HttpEndpoint {
  std::string host;  // a name, an IPv4 address or an IPv6 address without its brackets
  std::string port;
};

// An http:// URL taken apart: http://HOST[:PORT][/PATH], HOST a name, an IPv4 address or [an
// IPv6 address].
struct HttpUrl {
  std::string host;  // as HttpEndpoint's
  std::string port;  // `default_port` when the URL names none
  std::string path;  // "/" when the URL names none
  HttpEndpoint endpoint() const { return {host, port}; }
};

// The one parser of the command line's URLs (`bench --http`, `--admin`). `default_port` empty:
// the URL must name its port. The error says what is wrong with the URL, the caller puts its flag
// and the URL in front: "it must start with http://", "it opens \"[\" and never closes it",
// "after \"]\" only \":PORT\" may follow", "it names no host", "it names no port", "port \"P\" is
// not a number 1 to 65535" (at most five digits).
Result<HttpUrl> parse_http_url(std::string_view url, std::string_view default_port);
// How much of a URL (a port: 16 bytes) an error quotes, escaped (src/core/text.h,
// quote_for_error): a URL of any length or bytes gives a one-line message of bounded size.
inline constexpr std::size_t kUrlShown = 200;

struct HttpTimeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds answer{300'000};
};

struct HttpAnswer {
  int status = 0;
  std::string body;
};

// The addresses of `endpoint`. Error: `cannot resolve "HOST": <the system's words>`.
Result<std::vector<boost::asio::ip::tcp::endpoint>> resolve_endpoint(const HttpEndpoint& endpoint);

// Connects `socket` to the first of `addresses` that takes it, giving up after `timeout`, then
// calls `done` on the socket's executor with "" (connected) or what failed: the system's words
// of the last address's refusal, or "no connection within 10 s". `socket` must stay alive until
// `done` ran.
void connect_within(boost::asio::ip::tcp::socket& socket,
                    const std::vector<boost::asio::ip::tcp::endpoint>& addresses,
                    std::chrono::milliseconds timeout, std::function<void(std::string)> done);

// Sends `request` to `endpoint` on a connection of its own and reads the answer (a body of at
// most 1 GiB), within `timeouts`.
Result<HttpAnswer> http_request(
    const HttpEndpoint& endpoint,
    const boost::beast::http::request<boost::beast::http::string_body>& request,
    HttpTimeouts timeouts = {});

}  // namespace spillway::cli
