// HttpServer on Boost.Asio with Beast's HTTP parser (through RequestReader). See http_server.h for
// the contract.
//
// Threads: `threads` workers, each running its own io_context on one thread. A connection lives
// on one worker from accept to close, so its state needs no lock and no strand; the acceptor
// runs on worker 0 and hands connections to the workers in turn. Answers given on a worker's
// own thread while the handler runs (the in-memory store) are written without a queue hop;
// answers from other threads (the Redis client's) are posted to the connection's worker.
//
// Ownership and lifetimes:
// - HttpServer holds the Server (as its Impl) by shared_ptr. The Server owns the workers; the
//   accept loop and the timers capture a raw Server*, valid because the threads are joined (stop)
//   before the Server goes away, and handlers still queued then are destroyed with the
//   io_contexts without running.
// - A Connection is held by shared_ptr by every pending operation on it; its deadline timer is
//   always pending until close(), so a connection lives exactly until it is closed. It points back
//   to the Server with a raw pointer: it never outlives the io_contexts, which are destroyed
//   before the members a Connection touches.
// - A Responder holds weak pointers to the Server and the Connection. It locks the Server first
//   (keeping the io_contexts alive), then the Connection, and posts the response to the
//   connection's worker; if either is gone, the response is dropped. A Responder destroyed
//   without an answer sends a 500, so a connection never waits forever for a lost Responder.
//
// Per connection: wait for the first byte of a request (idle timeout, or the read timeout on a
// fresh connection), read the whole request (read timeout from the first byte), call the
// handler, write its response, repeat. Deadlines are fields checked by one timer per connection
// that ticks a few times per timeout, so a request costs no timer operation. The next request is
// read only after the previous response was written, so responses keep the order of requests. A
// response that closes the connection after a protocol error (or with unread bytes) is followed
// by a lingering close (shutdown of the sending side, then reading and discarding for a short
// while), so a client that is still sending does not get a reset that destroys its response.
#include "src/server/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "src/core/decimal.h"
#include "src/server/ascii.h"
#include "src/server/json_text.h"
#include "src/server/request_reader.h"

namespace spillway::server {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using Acceptor = asio::basic_socket_acceptor<tcp, Executor>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a closing connection keeps reading (and discarding) what the client still sends.
constexpr milliseconds kMaxLinger{1000};
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
// After the drain deadline: how long stop() waits for force-closed connections and the threads.
constexpr milliseconds kStopGrace{1000};
// Pause before accepting again after an error such as "too many open files".
constexpr milliseconds kAcceptRetry{50};
constexpr std::size_t kReadSize = 4096;
// The default access log is written in blocks: when this much is buffered, or every interval.
constexpr std::size_t kLogFlushBytes = 32 * 1024;
constexpr milliseconds kLogFlushInterval{100};
bool contains_token(std::string_view list, std::string_view token) {
  // A comma-separated header value ("keep-alive, Upgrade") holds `token`, ignoring case.
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (ascii_iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// RFC 9110 token characters: what a header name may be made of.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> table{};
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) table[c] = table[c - 'a' + 'A'] = true;
  for (const char c : std::string_view("!#$%&'*+-.^_`|~"))
    table[static_cast<unsigned char>(c)] = true;
  return table;
}();

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

// A header value that cannot end the header or start a new one.
bool is_safe_value(std::string_view text) {
  for (const char c : text) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

// "127.0.0.1" for IPv4 and IPv4-mapped IPv6 peers, "::1" for IPv6.
std::string peer_text(const asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  }
  return address.to_string();
}

std::string where(std::string_view host, std::uint16_t port) {
  if (host.find(':') != std::string_view::npos) {
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// "Address already in use" -> "address already in use", as the rest of a one-line message.
std::string cause(const error_code& ec) {
  std::string text = ec.message();
  if (!text.empty()) text[0] = ascii_lower(text[0]);
  return text;
}

std::unexpected<Error> failure(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

// The monotonic clock at the kernel tick's resolution (a few ms), good enough for timeouts and
// several times cheaper to read than steady_clock.
std::chrono::nanoseconds coarse_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

class Connection;

// ---- Server --------------------------------------------------------------------------------

// One thread and its io_context.
struct Worker {
  asio::io_context ioc{1};  // run by one thread
  asio::executor_work_guard<Executor> work{ioc.get_executor()};
  std::thread thread;
  std::thread::id thread_id;  // set by run() before the first accept is posted
};

class Server : public std::enable_shared_from_this<Server> {
 public:
  Server(HttpServerOptions options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)) {
    if (!options_.access_log) default_log_ = true;
    const int threads = std::max(options_.threads, 1);
    for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>());
    acceptor_.emplace(workers_[0]->ioc.get_executor());
    accept_retry_.emplace(workers_[0]->ioc.get_executor());
    log_timer_.emplace(workers_[0]->ioc.get_executor());
  }
  ~Server() {
    stop(milliseconds(0));
    // Handlers still queued hold connections; they go with the io_contexts, while the members
    // connections use (declared before workers_) are still alive.
    acceptor_.reset();
    accept_retry_.reset();
    log_timer_.reset();
    workers_.clear();
    flush_log();
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Result<void> listen();
  Result<void> run();
  void stop(milliseconds drain);

  std::uint16_t port() const { return port_; }
  std::size_t open_connections() const { return open_.load(std::memory_order_acquire); }

  // For connections.
  const HttpServerOptions& options() const { return options_; }
  const Handler& handler() const { return handler_; }
  bool logging() const { return options_.log_requests; }
  void log(std::string_view line);
  void connection_opened() { open_.fetch_add(1, std::memory_order_acq_rel); }
  void connection_closed() { open_.fetch_sub(1, std::memory_order_acq_rel); }
  void forget(Connection* connection);
  // How often a connection checks its deadline: a few times per timeout, at most once a second.
  milliseconds tick() const {
    const auto shortest = std::min(options_.read_timeout, options_.idle_timeout);
    return std::clamp(shortest / 4, milliseconds(5), milliseconds(1000));
  }

 private:
  void accept();
  void on_accept(const error_code& ec, std::thread::id thread, Socket socket);
  bool on_server_thread() const;
  void flush_log();
  void write_log_locked();  // log_buffer_ to stderr; the caller holds log_mutex_
  void schedule_log_flush();

  // Declared first so they outlive the io_contexts: connections destroyed with them use them.
  HttpServerOptions options_;
  const Handler handler_;
  bool default_log_ = false;  // no access_log given: buffered lines to stderr
  std::mutex log_mutex_;      // guards log_buffer_ and calls of options_.access_log
  std::string log_buffer_;
  std::atomic<std::size_t> open_{0};
  std::mutex mutex_;  // guards the fields below, with `changed_`
  std::condition_variable changed_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_;
  bool stopping_ = false;
  int running_threads_ = 0;

  std::mutex stop_mutex_;  // serializes stop()
  bool stopped_ = false;
  std::uint16_t port_ = 0;

  std::vector<std::unique_ptr<Worker>> workers_;
  std::size_t next_worker_ = 0;       // the accept loop's turn (worker 0's thread only)
  std::optional<Acceptor> acceptor_;  // on worker 0, like the two timers
  std::optional<Timer> accept_retry_;
  std::optional<Timer> log_timer_;
  tcp::endpoint peer_;  // filled by the pending accept
};

// ---- Connection ----------------------------------------------------------------------------

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server& server, Socket socket, std::thread::id thread, std::string peer, bool counted)
      : server_(server),
        executor_(socket.get_executor()),
        thread_(thread),
        socket_(std::move(socket)),
        timer_(executor_),
        reader_(server.options().max_header_bytes, server.options().max_body_bytes),
        peer_(std::move(peer)),
        counted_(counted) {
    if (counted_) server_.connection_opened();
  }
  ~Connection() { release(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // From the accept loop (not yet on the connection's thread: nothing else knows it).
  void start(bool reject) {
    asio::post(executor_, [self = shared_from_this(), reject] {
      if (self->state_ == State::kClosed) return;  // drained before it started
      self->arm_timer();
      if (reject) return self->respond_error(503, "too many connections");
      self->wait(true);
    });
  }

  // From any thread.
  void post_drain() {
    asio::post(executor_, [self = shared_from_this()] { self->drain(); });
  }
  void post_close() {
    asio::post(executor_, [self = shared_from_this()] { self->close(); });
  }
  // An answer from the handler. Given on this connection's thread while the handler is still
  // running, it is kept and written when the handler returns; otherwise it is posted.
  void answer(std::uint64_t sequence, HttpResponse response) {
    if (std::this_thread::get_id() == thread_ && in_handler_) {
      if (sequence == sequence_ && !early_answer_) early_answer_ = std::move(response);
      return;
    }
    asio::post(executor_,
               [self = shared_from_this(), sequence, response = std::move(response)]() mutable {
                 self->on_response(sequence, std::move(response));
               });
  }

 private:
  enum class State { kNew, kIdle, kReading, kHandling, kWriting, kLingering, kClosed };

  const HttpServerOptions& options() const { return server_.options(); }

  // The deadline is checked every tick(); the pending wait keeps the connection alive.
  void arm_timer() {
    timer_.expires_after(server_.tick());
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->state_ == State::kClosed) return;
      if (coarse_now() >= self->deadline_) return self->close();  // timed out
      self->arm_timer();
    });
  }
  void set_deadline(milliseconds from_now) { deadline_ = coarse_now() + from_now; }

  // Waits for the first byte of the next request, or parses one already buffered (pipelining).
  void wait(bool fresh) {
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

  void read_more() {
    socket_.async_read_some(
        reader_.prepare(kReadSize),
        [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(const error_code& ec, std::size_t n) {
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

  void parse() {
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
    if (!reader_.take_continue_request()) return read_more();
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](const error_code& ec, std::size_t) {
                        if (self->state_ == State::kClosed) return;
                        if (ec) return self->close();
                        self->read_more();
                      });
  }

  void on_request() {
    method_ = reader_.method();
    path_ = reader_.path();
    ReadRequest read = reader_.take();
    keep_alive_ = read.keep_alive;
    http10_ = read.http10;
    head_ = read.head;
    request_complete_ = true;
    read.request.peer_address = peer_;

    state_ = State::kHandling;
    deadline_ = std::chrono::nanoseconds::max();  // the handler always answers (or a 500 does)
    if (server_.logging()) started_ = SteadyClock::now();
    ++sequence_;
    call_handler(std::move(read.request));
  }

  void call_handler(HttpRequest request);

  void on_response(std::uint64_t sequence, HttpResponse response) {
    if (state_ != State::kHandling || sequence != sequence_) return;  // closed, or stale
    write(std::move(response));
  }

  // Protocol errors and rejections: answer and close, without calling the handler.
  void respond_error(int status, const std::string& message) {
    keep_alive_ = false;
    request_complete_ = false;
    head_ = false;
    started_ = SteadyClock::now();
    HttpResponse response;
    response.status = status;
    response.body = error_body(message);
    write(std::move(response));
  }

  void write(HttpResponse response) {
    if (state_ == State::kClosed) return;
    if (draining_) keep_alive_ = false;
    int status = response.status;
    if (status < 200 || status > 999) status = 500;  // no interim responses, 3 digits
    const bool no_body = status == 204 || status == 304;

    const auto known = http::int_to_status(static_cast<unsigned>(status));
    std::string_view reason = "Unknown";
    if (known != http::status::unknown) {
      const auto text = http::obsolete_reason(known);
      reason = std::string_view(text.data(), text.size());
    }
    out_.clear();
    out_.append("HTTP/1.1 ");
    append_decimal(out_, status);
    out_.append(" ").append(reason.data(), reason.size()).append("\r\n");
    if (!response.content_type.empty() && is_safe_value(response.content_type)) {
      out_.append("Content-Type: ").append(response.content_type).append("\r\n");
    }
    if (!no_body) {
      out_.append("Content-Length: ");
      append_decimal(out_, static_cast<std::int64_t>(response.body.size()));
      out_.append("\r\n");
    }
    for (const auto& [name, value] : response.headers) {
      if (!is_token(name) || !is_safe_value(value)) continue;
      if (ascii_iequals(name, "content-length") || ascii_iequals(name, "transfer-encoding"))
        continue;
      if (ascii_iequals(name, "connection")) {
        if (contains_token(value, "close")) keep_alive_ = false;
        continue;
      }
      out_.append(name).append(": ").append(value).append("\r\n");
    }
    if (!keep_alive_) {
      out_.append("Connection: close\r\n");
    } else if (http10_) {
      out_.append("Connection: keep-alive\r\n");
    }
    out_.append("\r\n");
    if (!no_body && !head_) out_.append(response.body);

    status_ = status;
    state_ = State::kWriting;
    set_deadline(std::max(options().read_timeout, options().idle_timeout));
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_written(ec); });
  }

  void on_written(const error_code& ec) {
    if (state_ == State::kClosed) return;
    if (server_.logging()) log_request();
    if (ec) return close();
    if (!keep_alive_ || draining_) return linger();
    wait(false);
  }

  // `method=POST path=/v1/check status=200 us=85 peer=127.0.0.1`
  void log_request() {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started_);
    std::string& line = log_line_;
    line.assign("method=").append(method_).append(" path=").append(path_).append(" status=");
    append_decimal(line, status_);
    line.append(" us=");
    append_decimal(line, us.count());
    line.append(" peer=").append(peer_);
    server_.log(line);
  }

  // Stops sending, then reads and discards until the client closes (or a short deadline), so the
  // response is not lost to a reset caused by unread request bytes. Not needed when the request
  // was read completely and nothing follows it.
  void linger() {
    state_ = State::kLingering;
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

  void linger_read() {
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
  void drain() {
    draining_ = true;
    if (state_ == State::kNew || state_ == State::kIdle) close();
  }

  void close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    error_code ignored;
    socket_.close(ignored);  // pending reads and writes end with operation_aborted
    timer_.cancel();         // and so does the deadline wait, dropping the last reference
    release();
  }

  // Leaves the server's books once: the open count and the list stop() waits on.
  void release() {
    if (released_) return;
    released_ = true;
    if (counted_) server_.connection_closed();
    server_.forget(this);
  }

  Server& server_;
  const Executor executor_;       // the connection's worker
  const std::thread::id thread_;  // ... and its thread
  Socket socket_;
  Timer timer_;
  RequestReader reader_;
  const std::string peer_;
  const bool counted_;  // false for a connection rejected over max_connections
  State state_ = State::kNew;
  std::chrono::nanoseconds deadline_ = std::chrono::nanoseconds::max();  // on coarse_now()
  bool draining_ = false;
  bool keep_alive_ = true;
  bool head_ = false;
  bool http10_ = false;
  bool request_complete_ = false;  // the last request was read whole (no protocol error)
  bool released_ = false;
  bool in_handler_ = false;                   // the handler is running on this connection's thread
  std::optional<HttpResponse> early_answer_;  // given while in_handler_
  std::uint64_t sequence_ = 0;                // of the request the handler is answering
  std::string out_;
  std::size_t lingered_ = 0;
  // For the access log.
  std::string method_ = "-";
  std::string path_ = "-";
  int status_ = 0;
  SteadyClock::time_point started_{};
  std::string log_line_;
};

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

// ---- Server, continued ---------------------------------------------------------------------

void Server::log(std::string_view line) {
  const std::lock_guard lock(log_mutex_);
  if (default_log_) {
    log_buffer_.append(line).push_back('\n');
    if (log_buffer_.size() >= kLogFlushBytes) write_log_locked();
    return;
  }
  try {
    options_.access_log(line);
  } catch (...) {  // a failing log sink must not take the server down
  }
}

void Server::flush_log() {
  const std::lock_guard lock(log_mutex_);
  if (!log_buffer_.empty()) write_log_locked();
}

void Server::write_log_locked() {
  std::fwrite(log_buffer_.data(), 1, log_buffer_.size(), stderr);
  std::fflush(stderr);
  log_buffer_.clear();
}

void Server::schedule_log_flush() {
  log_timer_->expires_after(kLogFlushInterval);
  log_timer_->async_wait([this](const error_code& ec) {
    flush_log();
    if (!ec) schedule_log_flush();
  });
}

void Server::forget(Connection* connection) {
  const std::lock_guard lock(mutex_);
  connections_.erase(connection);
  changed_.notify_all();
}

Result<void> Server::listen() {
  const std::string at = where(options_.host, options_.port);
  if (options_.threads < 1) return invalid_argument(at + ": threads must be at least 1");
  error_code ec;
  asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) {
    if (options_.host != "localhost") {
      return invalid_argument(at + ": host must be a numeric IPv4/IPv6 address or localhost");
    }
    address = asio::ip::address_v4::loopback();
  }
  const tcp::endpoint endpoint(address, options_.port);
  Acceptor& acceptor = *acceptor_;
  if (acceptor.open(endpoint.protocol(), ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  if (acceptor.set_option(asio::socket_base::reuse_address(true), ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  if (acceptor.bind(endpoint, ec)) return failure(Errc::kUnavailable, at + ": " + cause(ec));
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  const tcp::endpoint bound = acceptor.local_endpoint(ec);
  if (ec) return failure(Errc::kUnavailable, at + ": " + cause(ec));
  port_ = bound.port();
  return {};
}

Result<void> Server::run() {
  std::string failed;
  for (std::size_t i = 0; i < workers_.size() && failed.empty(); ++i) {
    Worker& worker = *workers_[i];
    {
      const std::lock_guard lock(mutex_);
      ++running_threads_;
    }
    try {
      worker.thread = std::thread([this, &worker] {
        worker.ioc.run();
        const std::lock_guard lock(mutex_);
        --running_threads_;
        changed_.notify_all();
      });
      worker.thread_id = worker.thread.get_id();
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex_);
      --running_threads_;
      failed = e.what();
    }
  }
  if (!failed.empty()) {
    stop(milliseconds(0));
    return failure(Errc::kUnavailable,
                   where(options_.host, port_) + ": cannot start a thread: " + failed);
  }
  // Posted once every thread id is known (connections are told their worker's).
  asio::post(workers_[0]->ioc, [this] {
    accept();
    if (default_log_ && options_.log_requests) schedule_log_flush();
  });
  return {};
}

void Server::accept() {
  Worker& worker = *workers_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  acceptor_->async_accept(worker.ioc, peer_,
                          [this, thread = worker.thread_id](const error_code& ec, Socket socket) {
                            on_accept(ec, thread, std::move(socket));
                          });
}

void Server::on_accept(const error_code& ec, std::thread::id thread, Socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;  // stop()
  if (ec) {
    // Out of descriptors or memory: pause instead of spinning; a connection that went away
    // before it was accepted (ECONNABORTED) just means accepting the next one.
    if (ec == asio::error::connection_aborted) return accept();
    accept_retry_->expires_after(kAcceptRetry);
    accept_retry_->async_wait([this](const error_code& wait_ec) {
      if (!wait_ec && acceptor_->is_open()) accept();
    });
    return;
  }
  const bool reject = open_.load(std::memory_order_acquire) >= options_.max_connections;
  auto connection = std::make_shared<Connection>(*this, std::move(socket), thread,
                                                 peer_text(peer_.address()), !reject);
  bool admitted = false;
  {
    const std::lock_guard lock(mutex_);
    if (!stopping_) {
      connections_.emplace(connection.get(), connection);
      admitted = true;
    }
  }
  if (admitted) connection->start(reject);  // else it closes as it goes out of scope
  accept();
}

bool Server::on_server_thread() const {
  const auto me = std::this_thread::get_id();
  return std::any_of(workers_.begin(), workers_.end(),
                     [me](const auto& worker) { return worker->thread_id == me; });
}

void Server::stop(milliseconds drain) {
  const std::lock_guard stop_lock(stop_mutex_);
  if (stopped_) return;

  // 1. No new connections; idle ones close, busy ones finish their request and then close.
  std::vector<std::shared_ptr<Connection>> live;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    for (const auto& [raw, weak] : connections_) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
  }
  asio::post(workers_[0]->ioc, [this] {
    error_code ignored;
    acceptor_->close(ignored);
    accept_retry_->cancel();
    log_timer_->cancel();
  });
  for (const auto& connection : live) connection->post_drain();
  live.clear();
  if (on_server_thread()) return;  // cannot wait for ourselves; the destructor finishes the job

  // 2. Wait for the drain, then close whatever is left.
  {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, drain, [this] { return connections_.empty(); });
    for (const auto& [raw, weak] : connections_) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
  }
  for (const auto& connection : live) connection->post_close();
  live.clear();

  // 3. With no connection, no acceptor and no timer, the threads run out of work and return.
  for (const auto& worker : workers_) worker->work.reset();
  {
    std::unique_lock lock(mutex_);
    const bool done = changed_.wait_for(
        lock, kStopGrace, [this] { return connections_.empty() && running_threads_ == 0; });
    if (!done) {
      for (const auto& worker : workers_) worker->ioc.stop();
    }
  }
  for (const auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  flush_log();
  stopped_ = true;
}

}  // namespace

// ---- public API ----------------------------------------------------------------------------

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return &value;
  }
  return nullptr;
}

class HttpServer::Impl : public Server {
 public:
  using Server::Server;
};

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  if (impl_) impl_->stop(milliseconds(5000));  // the default drain of stop()
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, Handler handler) {
  const std::string at = where(options.host, options.port);
  if (!handler) return invalid_argument(at + ": no request handler");
  std::shared_ptr<Impl> impl;
  try {
    impl = std::make_shared<Impl>(std::move(options), std::move(handler));
  } catch (const std::exception& e) {
    return failure(Errc::kUnavailable, at + ": " + e.what());
  }
  if (auto listening = impl->listen(); !listening) return std::unexpected(listening.error());
  if (auto running = impl->run(); !running) return std::unexpected(running.error());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::uint16_t HttpServer::port() const { return impl_->port(); }

std::size_t HttpServer::open_connections() const { return impl_->open_connections(); }

void HttpServer::stop(std::chrono::milliseconds drain) { impl_->stop(drain); }

}  // namespace spillway::server
