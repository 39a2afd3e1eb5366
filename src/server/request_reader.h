// Turns the bytes arriving on one HTTP/1.1 connection into requests, one at a time, within the
// server's limits on header and body size. The server reads its socket straight into prepare() /
// commit() and calls parse(); the request fuzz target (fuzz/request_fuzz.cc) feeds arbitrary bytes
// through exactly the same calls.
//
// Errors name the problem: 400 "malformed request: …", 413 for a body over the limit, 431 for
// headers over the limit. After an error the connection must be answered and closed.
//
// Not thread-safe: one reader per connection, used by one thread at a time.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "src/server/http_server.h"

namespace spillway::server {

// A complete request and what the connection needs to know about it.
struct ReadRequest {
  HttpRequest request;     // header names lower-cased; peer_address left empty
  bool keep_alive = true;  // HTTP/1.1 without "Connection: close", or 1.0 with keep-alive
  bool http10 = false;     // HTTP/1.0: a kept-alive response says "Connection: keep-alive"
  bool head = false;       // HEAD: the response has no body
};

class RequestReader {
 public:
  enum class State {
    kNeedMore,  // the current request is not complete yet: receive more bytes, parse() again
    kComplete,  // a whole request has been parsed: take() it
    kError,     // malformed, or over a limit: answer error_status() / error_message(), then close
  };

  RequestReader(std::size_t max_header_bytes, std::size_t max_body_bytes);

  // Space for up to `bytes` more received bytes, then how many arrived.
  boost::asio::mutable_buffer prepare(std::size_t bytes);
  void commit(std::size_t bytes);
  // Received bytes not parsed yet (the beginning of a pipelined request, after a take()).
  std::size_t buffered() const { return buffer_.size(); }
  // Forgets unparsed bytes (a closing connection discarding what the client still sends).
  void discard() { buffer_.clear(); }

  // Parses what has been received. Idempotent while more bytes are needed.
  State parse();

  // The current request's header is complete and asks for "100 Continue" before its body; true
  // once per request (the caller sends the interim response when it sees it).
  bool take_continue_request();

  // The current request's method, target and headers (no body yet), once per request, when its
  // header is complete and its body is still to come: for a server that refuses a request before
  // it reads the body (HttpServerOptions::check_headers). nullopt otherwise.
  std::optional<HttpRequest> take_header_only();

  // After kComplete: the request. The reader then starts on the next one (buffered bytes stay).
  ReadRequest take();

  // After kError.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // The current request's method and path without the query, once its whole header has been
  // parsed (or parsing failed after the request line), "-" before that: for the access log (read
  // them before take(), which starts the next request).
  const std::string& method() const { return method_; }
  const std::string& path() const { return path_; }

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
  void start_next();
  void remember_request_line(bool failed);

  const std::size_t max_header_bytes_;
  const std::size_t max_body_bytes_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  bool continue_checked_ = false;
  bool header_offered_ = false;
  bool line_known_ = false;
  State state_ = State::kNeedMore;
  int error_status_ = 0;
  std::string error_message_;
  std::string method_ = "-";
  std::string path_ = "-";
};

}  // namespace spillway::server
