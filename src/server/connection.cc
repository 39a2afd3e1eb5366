// Connection (see connection.h) and the state its Responders share.
#include "src/server/connection.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <ctime>
#include <exception>
#include <string_view>
#include <utility>

#include "src/core/decimal.h"
#include "src/core/json_writer.h"
#include "src/server/http_server_impl.h"
#include "src/server/response_text.h"
#include "src/server/trace_context.h"

namespace spillway::server {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;

// How long a closing connection keeps reading (and discarding) what the client still sends.
constexpr milliseconds kMaxLinger{1000};
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
constexpr std::size_t kReadSize = 4096;

// The monotonic clock at the kernel tick's resolution (a few ms), good enough for timeouts and
// several times cheaper to read than steady_clock.
std::chrono::nanoseconds coarse_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// What a Responder shares between its copies: the first answer wins; no answer at all sends a 500.
class ResponderState {
 public:
  ResponderState(std::weak_ptr<Server> server, std::weak_ptr<Connection> connection,
                 std::uint64_t sequence)
      : server_(std::move(server)), connection_(std::move(connection)), sequence_(sequence) {}
  ~ResponderState() {
    if (answered_.load(std::memory_order_acquire)) return;
    try {
      HttpResponse response;
      response.status = 500;
      response.body = error_body("the request handler did not answer");
      answer(std::move(response));
    } catch (...) {  // out of memory while giving up: the connection closes at stop or timeout
    }
  }
  ResponderState(const ResponderState&) = delete;
  ResponderState& operator=(const ResponderState&) = delete;

  void answer(HttpResponse response) {
    if (answered_.exchange(true, std::memory_order_acq_rel)) return;
    const std::shared_ptr<Server> server = server_.lock();  // keeps the io_contexts alive
    if (!server) return;
    const std::shared_ptr<Connection> connection = connection_.lock();
    if (!connection) return;
    connection->answer(sequence_, std::move(response));
  }

 private:
  const std::weak_ptr<Server> server_;
  const std::weak_ptr<Connection> connection_;
  const std::uint64_t sequence_;
  std::atomic<bool> answered_{false};
};

}  // namespace

Connection::Connection(Server& server, Socket socket, std::thread::id thread, std::string peer,
                       bool counted, std::shared_ptr<boost::asio::ssl::context> tls)
    : server_(server),
      executor_(socket.get_executor()),
      thread_(thread),
      socket_(std::move(socket)),
      tls_context_(std::move(tls)),
      timer_(executor_),
      reader_(server.options().max_header_bytes, server.options().max_body_bytes),
      peer_(std::move(peer)),
      counted_(counted) {
  if (tls_context_) tls_.emplace(socket_, *tls_context_);
  if (counted_) server_.connection_opened();
}

Connection::~Connection() { release(); }

void Connection::start(const char* refusal) {
  asio::post(executor_, [self = shared_from_this(), refusal] {
    if (self->state_ == State::kClosed) return;  // drained before it started
    self->arm_timer();
    if (refusal != nullptr) {
      // Under TLS, no handshake for a refused connection: closed without an answer.
      if (self->options().tls) return self->close();
      return self->respond_error(503, refusal);
    }
    if (!self->tls_) return self->wait(true);
    // The handshake within the read deadline (the timer closes a client that stalls it).
    self->set_deadline(self->options().read_timeout);
    self->tls_->async_handshake(boost::asio::ssl::stream_base::server,
                                [self](const error_code& ec) {
                                  if (self->state_ == State::kClosed) return;
                                  if (ec) return self->close();  // refused or broken off
                                  self->wait(true);
                                });
  });
}

template <typename Buffers, typename Handler>
void Connection::read_some(const Buffers& buffers, Handler&& handler) {
  if (tls_) return tls_->async_read_some(buffers, std::forward<Handler>(handler));
  socket_.async_read_some(buffers, std::forward<Handler>(handler));
}

template <typename Buffers, typename Handler>
void Connection::write_all(const Buffers& buffers, Handler&& handler) {
  if (tls_) return asio::async_write(*tls_, buffers, std::forward<Handler>(handler));
  asio::async_write(socket_, buffers, std::forward<Handler>(handler));
}

void Connection::post_drain() {
  asio::post(executor_, [self = shared_from_this()] { self->drain(); });
}

void Connection::post_close() {
  asio::post(executor_, [self = shared_from_this()] { self->close(); });
}

void Connection::answer(std::uint64_t sequence, HttpResponse response) {
  if (std::this_thread::get_id() == thread_ && in_handler_) {
    if (sequence == sequence_ && !early_answer_) early_answer_ = std::move(response);
    return;
  }
  asio::post(executor_,
             [self = shared_from_this(), sequence, response = std::move(response)]() mutable {
               self->on_response(sequence, std::move(response));
             });
}

const HttpServerOptions& Connection::options() const { return server_.options(); }

// The deadline is checked every tick(); the pending wait keeps the connection alive.
void Connection::arm_timer() {
  timer_.expires_after(server_.tick());
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->state_ == State::kClosed) return;
    if (coarse_now() >= self->deadline_) return self->close();  // timed out
    self->arm_timer();
  });
}

void Connection::set_deadline(milliseconds from_now) { deadline_ = coarse_now() + from_now; }

// Waits for the first byte of the next request, or parses one already buffered (pipelining).
void Connection::wait(bool fresh) {
  if (state_ == State::kClosed) return;
  if (draining_) return close();
  if (reader_.buffered() > 0) {
    state_ = State::kReading;
    set_deadline(options().read_timeout);
    return parse();
  }
  state_ = State::kIdle;
  set_deadline(fresh ? options().read_timeout : options().idle_timeout);
  read_more();
}

void Connection::read_more() {
  read_some(
      reader_.prepare(kReadSize),
      [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(const error_code& ec, std::size_t n) {
  if (state_ == State::kClosed) return;
  // Idle: the client went away. Mid-request: it went away or broke off; nobody to answer.
  if (ec) return close();
  reader_.commit(n);
  if (state_ == State::kIdle) {
    state_ = State::kReading;
    set_deadline(options().read_timeout);  // the whole request from its first byte
  }
  parse();
}

void Connection::parse() {
  switch (reader_.parse()) {
    case RequestReader::State::kComplete:
      return on_request();
    case RequestReader::State::kError:
      method_ = reader_.method();
      path_ = reader_.path();
      return respond_error(reader_.error_status(), reader_.error_message());
    case RequestReader::State::kNeedMore:
      break;
  }
  if (options().check_headers) {
    if (std::optional<HttpRequest> head = reader_.take_header_only()) {
      head->peer_address = peer_;
      if (std::optional<HttpResponse> refused = options().check_headers(*head)) {
        method_ = head->method;
        path_ = target_path(head->target);
        framing_.keep_alive = false;
        request_complete_ = false;
        framing_.head = false;
        started_.restart();
        return write(std::move(*refused));
      }
      // Accepted (a valid credential): the body may take body_timeout from now.
      proven_.store(true, std::memory_order_release);
      if (options().body_timeout > options().read_timeout) set_deadline(options().body_timeout);
    }
  }
  if (!reader_.take_continue_request()) return read_more();
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  write_all(asio::buffer(kContinue.data(), kContinue.size()),
            [self = shared_from_this()](const error_code& ec, std::size_t) {
              if (self->state_ == State::kClosed) return;
              if (ec) return self->close();
              self->read_more();
            });
}

void Connection::on_request() {
  method_ = reader_.method();
  path_ = reader_.path();
  ReadRequest read = reader_.take();
  framing_ =
      ResponseFraming{.keep_alive = read.keep_alive, .http10 = read.http10, .head = read.head};
  request_complete_ = true;
  proven_.store(true, std::memory_order_release);
  read.request.peer_address = peer_;
  trace_id_.clear();
  if (options().log_json && server_.logging()) {
    if (const std::string* traceparent = read.request.header("traceparent")) {
      if (std::optional<std::string> id = trace_id_of(*traceparent)) trace_id_ = std::move(*id);
    }
  }

  state_ = State::kHandling;
  deadline_ = std::chrono::nanoseconds::max();  // the handler always answers (or a 500 does)
  if (server_.logging()) started_.restart();
  ++sequence_;
  call_handler(std::move(read.request));
}

void Connection::call_handler(HttpRequest request) {
  std::optional<HttpResponse> failed;
  {
    auto state =
        std::make_shared<ResponderState>(server_.weak_from_this(), weak_from_this(), sequence_);
    Responder responder = [state](HttpResponse response) { state->answer(std::move(response)); };
    in_handler_ = true;
    try {
      server_.handler()(std::move(request), std::move(responder));
    } catch (const std::exception& e) {
      failed.emplace();
      failed->body = error_body(std::string("the request handler failed: ") + e.what());
    } catch (...) {
      failed.emplace();
      failed->body = error_body("the request handler failed");
    }
    if (failed) {
      failed->status = 500;
      state->answer(std::move(*failed));
    }
    // Dropping the last Responder here without an answer gives the 500, still in the handler.
    state.reset();
    in_handler_ = false;
  }
  if (early_answer_) {
    HttpResponse response = std::move(*early_answer_);
    early_answer_.reset();
    on_response(sequence_, std::move(response));
  }
}

void Connection::on_response(std::uint64_t sequence, HttpResponse response) {
  if (state_ != State::kHandling || sequence != sequence_) return;  // closed, or stale
  write(std::move(response));
}

// Protocol errors and rejections: answer and close, without calling the handler.
void Connection::respond_error(int status, const std::string& message) {
  framing_.keep_alive = false;
  request_complete_ = false;
  framing_.head = false;
  started_.restart();
  HttpResponse response;
  response.status = status;
  response.body = error_body(message);
  write(std::move(response));
}

void Connection::write(HttpResponse response) {
  if (state_ == State::kClosed) return;
  if (draining_ || response.close_connection) framing_.keep_alive = false;
  out_.clear();
  status_ = append_response(out_, response, framing_);
  log_fields_ = std::move(response.log_fields);
  state_ = State::kWriting;
  set_deadline(std::max(options().read_timeout, options().idle_timeout));
  write_all(asio::buffer(out_), [self = shared_from_this()](const error_code& ec, std::size_t) {
    self->on_written(ec);
  });
}

void Connection::on_written(const error_code& ec) {
  if (state_ == State::kClosed) return;
  if (server_.logging()) log_request();
  if (ec) return close();
  if (!framing_.keep_alive || draining_) return linger();
  wait(false);
}

// http_server.h: a request's method as a log line may show it.
std::string_view logged_method(std::string_view method) {
  static constexpr std::string_view kKnown[] = {"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                                "OPTIONS", "CONNECT", "TRACE", "PATCH", "-"};
  for (std::string_view known : kKnown) {
    if (method == known) return known;
  }
  return "other";
}

// `method=POST path=/v1/check status=200 us=85 peer=127.0.0.1`, or with log_json the members of
// its JSON object (AccessLog adds ts and level).
void Connection::log_request() {
  const std::chrono::microseconds us = started_.elapsed();
  std::string& line = log_line_;
  if (options().log_json) {
    line.clear();
    JsonWriter json = JsonWriter::in_object(line, false);
    json.member("msg", "request").member("method", logged_method(method_)).key("path");
    if (options().logged_path) {
      json.value(options().logged_path(path_));
    } else {
      json.value(path_);
    }
    json.member("status", status_)
        .member("latency_us", us.count())
        .member("peer", peer_)
        .members(log_fields_);
    if (!trace_id_.empty()) json.member("trace_id", trace_id_);
    trace_id_.clear();  // a later protocol error on this connection is not this request's
    return server_.log(line);
  }
  line.assign("method=").append(logged_method(method_)).append(" path=");
  if (options().logged_path) {
    line.append(options().logged_path(path_));
  } else {
    line.append(path_);
  }
  line.append(" status=");
  append_decimal(line, status_);
  line.append(" us=");
  append_decimal(line, us.count());
  line.append(" peer=").append(peer_);
  server_.log(line);
}

// Stops sending, then reads and discards until the client closes (or a short deadline), so the
// response is not lost to a reset caused by unread request bytes. Not needed when the request
// was read completely and nothing follows it.
void Connection::linger() {
  state_ = State::kLingering;
  if (tls_) {
    // close_notify, then the client's (or the deadline): what TLS has instead of a half close.
    set_deadline(std::min(options().read_timeout, kMaxLinger));
    return tls_->async_shutdown([self = shared_from_this()](const error_code&) { self->close(); });
  }
  error_code ec;
  if (request_complete_ && reader_.buffered() == 0 && socket_.available(ec) == 0 && !ec) {
    return close();
  }
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  reader_.discard();
  set_deadline(std::min(options().read_timeout, kMaxLinger));
  linger_read();
}

void Connection::linger_read() {
  socket_.async_read_some(reader_.prepare(kReadSize),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            if (self->state_ == State::kClosed) return;
                            self->lingered_ += n;
                            if (ec || self->lingered_ > kMaxLingerBytes) return self->close();
                            self->linger_read();
                          });
}

// stop(): idle connections close now; a request being read, handled or written finishes, and
// its response closes the connection.
void Connection::drain() {
  draining_ = true;
  if (state_ == State::kNew || state_ == State::kIdle) close();
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  error_code ignored;
  socket_.close(ignored);  // pending reads and writes end with operation_aborted
  timer_.cancel();         // and so does the deadline wait, dropping the last reference
  release();
}

// Leaves the server's books once: the open count and the list stop() waits on.
void Connection::release() {
  if (released_) return;
  released_ = true;
  if (counted_) server_.connection_closed();
  server_.forget(this);
}

}  // namespace spillway::server
