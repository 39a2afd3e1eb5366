// One HTTP/1.1 connection of the server (http_server.h has the contract, http_server_impl.h the
// Server that accepts connections).
//
// Per connection: wait for the first byte of a request (idle timeout, or the read timeout on a
// fresh connection), read the whole request (read timeout from the first byte), call the
// handler, write its response, repeat. Deadlines are fields checked by one timer per connection
// that ticks a few times per timeout, so a request costs no timer operation. The next request is
// read only after the previous response was written, so responses keep the order of requests. A
// response that closes the connection after a protocol error (or with unread bytes) is followed
// by a lingering close (shutdown of the sending side, then reading and discarding for a short
// while), so a client that is still sending does not get a reset that destroys its response.
//
// Threading: a connection lives on one worker from accept to close and runs there; its state needs
// no lock. Only start(), post_drain(), post_close() and answer() may be called from other
// threads. An answer given on the connection's own thread while the handler runs (the in-memory
// store) is written without a queue hop; answers from other threads (the Redis client's) are posted
// to the connection's worker.
//
// Ownership and lifetimes:
// - A Connection is held by shared_ptr by every pending operation on it; its deadline timer is
//   always pending until close(), so a connection lives exactly until it is closed. It points back
//   to the Server with a raw reference: it never outlives the io_contexts, which are destroyed
//   before the members a Connection touches.
// - A Responder holds weak pointers to the Server and the Connection. It locks the Server first
//   (keeping the io_contexts alive), then the Connection, and posts the response to the
//   connection's worker; if either is gone, the response is dropped. A Responder destroyed
//   without an answer sends a 500, so a connection never waits forever for a lost Responder.
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "src/core/stopwatch.h"
#include "src/server/http_server.h"
#include "src/server/request_reader.h"
#include "src/server/response_text.h"
#include "src/server/worker.h"

namespace spillway::server {

class Server;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `peer` is the remote address as text; `counted`: false for a connection rejected over
  // max_connections (it does not count as open); `tls`: the context of its TLS session (null:
  // plain HTTP), kept for the connection's lifetime.
  Connection(Server& server, Socket socket, std::thread::id thread, std::string peer, bool counted,
             std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // From the accept loop (not yet on the connection's thread: nothing else knows it). `refusal`
  // (a string literal, or null to serve): answer 503 with it and close.
  void start(const char* refusal);

  // From any thread: drain (stop()), or close now.
  void post_drain();
  void post_close();
  // From any thread: an answer from the handler to request number `sequence`. Given on this
  // connection's thread while the handler is still running, it is kept and written when the
  // handler returns; otherwise it is posted.
  void answer(std::uint64_t sequence, HttpResponse response);
  // From any thread: a request was read whole, or a header check_headers accepted (never evicted
  // by HttpServerOptions::evict_idle_when_full from then on).
  bool proven() const { return proven_.load(std::memory_order_acquire); }

 private:
  enum class State { kNew, kIdle, kReading, kHandling, kWriting, kLingering, kClosed };

  const HttpServerOptions& options() const;

  // The socket, or the TLS stream over it.
  template <typename Buffers, typename Handler>
  void read_some(const Buffers& buffers, Handler&& handler);
  template <typename Buffers, typename Handler>
  void write_all(const Buffers& buffers, Handler&& handler);

  void arm_timer();
  void set_deadline(std::chrono::milliseconds from_now);
  void wait(bool fresh);
  void read_more();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void parse();
  void on_request();
  void call_handler(HttpRequest request);
  void on_response(std::uint64_t sequence, HttpResponse response);
  void respond_error(int status, const std::string& message);
  void write(HttpResponse response);
  void on_written(const boost::system::error_code& ec);
  void log_request();
  void linger();
  void linger_read();
  void drain();
  void close();
  void release();

  Server& server_;
  const Executor executor_;       // the connection's worker
  const std::thread::id thread_;  // ... and its thread
  Socket socket_;
  const std::shared_ptr<boost::asio::ssl::context> tls_context_;
  std::optional<boost::asio::ssl::stream<Socket&>> tls_;  // over socket_, with tls_context_
  Timer timer_;
  RequestReader reader_;
  const std::string peer_;
  const bool counted_;  // false for a connection rejected over max_connections
  State state_ = State::kNew;
  std::chrono::nanoseconds deadline_ = std::chrono::nanoseconds::max();  // on coarse_now()
  bool draining_ = false;
  ResponseFraming framing_;        // of the current request's response
  bool request_complete_ = false;  // the last request was read whole (no protocol error)
  bool released_ = false;
  std::atomic<bool> proven_{false};
  bool in_handler_ = false;                   // the handler is running on this connection's thread
  std::optional<HttpResponse> early_answer_;  // given while in_handler_
  std::uint64_t sequence_ = 0;                // of the request the handler is answering
  std::string out_;
  std::size_t lingered_ = 0;
  // For the access log.
  std::string method_ = "-";
  std::string path_ = "-";
  int status_ = 0;
  Stopwatch started_;
  std::string log_line_;
  std::string log_fields_;  // the response's (HttpResponse::log_fields)
  std::string trace_id_;    // the request's valid traceparent's, or empty (log_json only)
};

}  // namespace spillway::server
