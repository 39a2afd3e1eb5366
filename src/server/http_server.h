// The HTTP/1.1 plumbing of `spillway serve` (Boost.Asio, Beast's parser): keep-alive, threads,
// bounded header and body sizes, idle and read timeouts (a slow client cannot hold a worker), a
// cap on connections, graceful drain on stop. What a request means is the Handler's business.
//
// Threading: the handler is called on one of the server's threads and must answer exactly once,
// through the Responder, from any thread (now or later); an answer given before the handler
// returns, on its thread, is written without a queue hop. Requests on one connection are answered
// in order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spillway/error.h"

namespace spillway::server {

class ServerTls;  // src/server/server_tls.h

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent: "/v1/limit?x=1"
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;
  std::string peer_address;  // the connection's remote IP, text ("127.0.0.1", "::1")

  // The first header with this (lower-case) name, if any.
  const std::string* header(std::string_view name) const;
  // Every field line with this (lower-case) name, in the order received (RFC 9110 §5.3: together
  // they are one comma-separated list). Views into `headers`: valid while it is unchanged.
  std::vector<std::string_view> header_values(std::string_view name) const;
};

// A request target's path: what comes before its first '?' ("/v1/limit?x=1" -> "/v1/limit"; the
// whole target when it has no query). What routes, logs and size limits look at.
inline std::string_view target_path(std::string_view target) {
  return target.substr(0, target.find('?'));
}
// A request target's query: what comes after its first '?' ("x=1"); empty when it has none.
inline std::string_view target_query(std::string_view target) {
  const std::size_t question = target.find('?');
  return question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
}

struct HttpResponse {
  int status = 200;
  // Added to Content-Type/Length. A name is a string literal (static storage: nothing to
  // allocate per response); a value is the response's own.
  std::vector<std::pair<std::string_view, std::string>> headers;
  std::string body;
  // A string literal (static storage: nothing to allocate per response), or empty for none.
  std::string_view content_type = "application/json";
  // The connection closes after this response (e.g. a refused credential: the client does not
  // keep the connection).
  bool close_connection = false;
  // With HttpServerOptions::log_json: JSON members the access log line adds, without braces or a
  // leading comma, e.g. `"allowed":false,"denied_by":"per_key"`. Never a caller's value.
  std::string log_fields;
};

using Responder = std::function<void(HttpResponse)>;
using Handler = std::function<void(HttpRequest, Responder)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port (see HttpServer::port)
  int threads = 2;
  std::size_t max_body_bytes = 64 * 1024;         // larger: 413 without calling the handler
  std::size_t max_header_bytes = 16 * 1024;       // larger: 431
  std::chrono::milliseconds read_timeout{5000};   // to receive one whole request
  std::chrono::milliseconds idle_timeout{60000};  // keep-alive connection with no request
  std::size_t max_connections = 10000;            // more: accepted and closed at once
  // Open connections from one peer (an IPv4 address, an IPv6 /64); more: 503 and closed at once,
  // so that one peer cannot hold every connection. 0: no cap.
  std::size_t max_connections_per_peer = 0;
  // At max_connections, a new connection closes the open connection accepted first among those
  // that have not sent a request yet (nor a header that check_headers accepted), instead of being
  // refused: an idle flood from many addresses cannot keep a client that sends a request out.
  bool evict_idle_when_full = false;
  // Once check_headers accepted a request's header: the time from then for the rest of its body
  // (an authorised upload may take longer than read_timeout). 0: read_timeout from the first byte.
  std::chrono::milliseconds body_timeout{0};
  // TLS on every connection (server.tls): the handshake must end within read_timeout; a
  // connection over a connection cap is closed without an answer. Null: plain HTTP.
  std::shared_ptr<ServerTls> tls;
  // One structured line per request (and per protocol error), e.g.
  // `2026-12-02T01:02:03.456Z method=POST path=/v1/check status=200 us=85 peer=127.0.0.1` (UTC,
  // RFC 3339; a sink gets each line with its time, without its newline). Default: stderr,
  // written in blocks (at least every 100 ms) so a busy server does not pay a system call per
  // request.
  std::function<void(std::string_view)> access_log;
  bool log_requests = true;  // false: no access log lines at all
  // Access log lines as JSON objects (server.log_format: json):
  // `{"ts":"2026-12-02T01:02:03.456Z","level":"info","msg":"request","method":"POST",
  // "path":"/v1/check","status":200,"latency_us":85,"peer":"127.0.0.1",<log_fields>,
  // "trace_id":"<32 hex>"}` (trace_id from a valid traceparent header only).
  bool log_json = false;
  // Called with a request's method, target and headers (no body, peer_address set) as soon as
  // its header is complete while its body is still to come; a response it returns is sent at
  // once and the connection closed, the body never read (the admin listener refuses a request
  // without a valid token before a large body costs memory). Default: none.
  std::function<std::optional<HttpResponse>(const HttpRequest&)> check_headers;
  // What an access log line shows as the path (e.g. the admin listener writes /v1/tenants/{key}
  // for a path that holds a caller's key). Default: the path as sent. (The method is shown when
  // it is a standard one, else as "other".)
  std::function<std::string(std::string_view path)> logged_path;
};

// A request's method as a log line may show it: a standard one (RFC 9110 §9, PATCH) or "-" as it
// is, any other token as "other" (a method is whatever the client sent, a caller's key included).
std::string_view logged_method(std::string_view method);

class HttpServer {
 public:
  // Binds and starts serving. Errors: bad host, port in use, etc. (message names host:port).
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, Handler handler);
  ~HttpServer();  // stop(), then joins the threads

  std::uint16_t port() const;  // the bound port
  std::size_t open_connections() const;

  // Stops accepting, lets requests in flight finish (up to `drain`), closes every connection and
  // joins the threads. Idempotent.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(5000));

 private:
  class Impl;
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace spillway::server
