// HttpServer on Boost.Beast: one io_context run by `threads` threads, one strand per connection.
// See http_server.h for the contract.
//
// Ownership and lifetimes:
// - HttpServer holds the Server (as its Impl) by shared_ptr. The Server owns the io_context; the
//   accept loop and its retry timer capture a raw Server*, valid because the threads are joined
//   (stop) before the Server goes away, and handlers still queued then are destroyed with the
//   io_context without running.
// - A Connection is held by shared_ptr by every pending operation on it, and by itself (`self_`)
//   while its handler has not answered yet. It points back to the Server with a raw pointer: it
//   never outlives the io_context, which is destroyed after the members a Connection touches.
// - A Responder holds weak pointers to the Server and the Connection. It locks the Server first
//   (keeping the io_context alive), then the Connection, and posts the response to the
//   connection's strand; if either is gone, the response is dropped. A Responder destroyed
//   without an answer sends a 500, so a connection never waits forever for a lost Responder.
//
// Per connection (all on its strand): wait for the first byte of a request (idle timeout, or the
// read timeout on a fresh connection), read the whole request (read timeout from the first byte),
// call the handler, write its response, repeat. The next request is read only after the previous
// response was written, so responses keep the order of requests. A response that closes the
// connection after a protocol error (or with unread bytes) is followed by a lingering close
// (shutdown of the sending side, then reading and discarding for a short while), so a client that
// is still sending does not get a reset that destroys the response before it reads it.
#include "src/server/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace spillway::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a closing connection keeps reading (and discarding) what the client still sends.
constexpr milliseconds kMaxLinger{1000};
constexpr std::size_t kMaxLingerBytes = 1024 * 1024;
// After the drain deadline: how long stop() waits for force-closed connections and the threads.
constexpr milliseconds kStopGrace{1000};
// Pause before accepting again after an error such as "too many open files".
constexpr milliseconds kAcceptRetry{50};
constexpr std::size_t kFirstReadSize = 4096;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower(c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool contains_token(std::string_view list, std::string_view token) {
  // A comma-separated header value ("keep-alive, Upgrade") holds `token`, ignoring case.
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string json_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
          out += code;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string error_body(std::string_view message) {
  return "{\"error\":\"" + json_escaped(message) + "\"}";
}

// RFC 9110 token characters: what a header name may be made of.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos) continue;
    return false;
  }
  return true;
}

bool is_safe_value(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
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
  if (!text.empty()) text[0] = lower(text[0]);
  return text;
}

std::unexpected<Error> failure(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

void log_to_stderr(std::string_view line) {
  static std::mutex mutex;
  std::string whole(line);
  whole += '\n';
  const std::lock_guard lock(mutex);
  std::fwrite(whole.data(), 1, whole.size(), stderr);
  std::fflush(stderr);
}

class Connection;

// ---- Server --------------------------------------------------------------------------------

class Server : public std::enable_shared_from_this<Server> {
 public:
  Server(HttpServerOptions options, Handler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        ioc_(std::max(options_.threads, 1)),
        work_(asio::make_work_guard(ioc_)),
        acceptor_(asio::make_strand(ioc_)),
        accept_retry_(acceptor_.get_executor()) {
    if (!options_.access_log) options_.access_log = log_to_stderr;
  }
  ~Server() { stop(milliseconds(0)); }
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
  void log(std::string_view line);
  void connection_opened() { open_.fetch_add(1, std::memory_order_acq_rel); }
  void connection_closed() { open_.fetch_sub(1, std::memory_order_acq_rel); }
  void forget(Connection* connection);

 private:
  void accept();
  void on_accept(const error_code& ec, tcp::socket socket);
  bool on_server_thread() const;

  // Declared first so they outlive the io_context: connections destroyed with it use them.
  HttpServerOptions options_;
  const Handler handler_;
  std::mutex log_mutex_;
  std::atomic<std::size_t> open_{0};
  std::mutex mutex_;  // guards the fields below, with `changed_`
  std::condition_variable changed_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_;
  bool stopping_ = false;
  int running_threads_ = 0;

  std::mutex stop_mutex_;  // serializes stop()
  bool stopped_ = false;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;

  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::acceptor acceptor_;  // on its own strand, like the retry timer
  asio::steady_timer accept_retry_;
  tcp::endpoint peer_;  // filled by the pending accept
};

// ---- Connection ----------------------------------------------------------------------------

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server& server, tcp::socket socket, std::string peer, bool counted)
      : server_(server),
        strand_(socket.get_executor()),
        stream_(std::move(socket)),
        peer_(std::move(peer)),
        counted_(counted) {
    if (counted_) server_.connection_opened();
  }
  ~Connection() { release(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // From the accept loop (not yet on the strand: nothing else knows the connection).
  void start(bool reject) {
    if (reject) {
      asio::post(strand_,
                 [self = shared_from_this()] { self->respond_error(503, "too many connections"); });
    } else {
      asio::post(strand_, [self = shared_from_this()] { self->wait(true); });
    }
  }

  // From any thread.
  void post_drain() {
    asio::post(strand_, [self = shared_from_this()] { self->drain(); });
  }
  void post_close() {
    asio::post(strand_, [self = shared_from_this()] { self->close(); });
  }
  void post_response(std::uint64_t sequence, HttpResponse response) {
    asio::post(strand_,
               [self = shared_from_this(), sequence, response = std::move(response)]() mutable {
                 self->on_response(sequence, std::move(response));
               });
  }

  // Only once the threads are joined: drops a self reference the strand could not drop.
  void abandon() {
    std::shared_ptr<Connection> keep = std::move(self_);
    release();
  }

 private:
  enum class State { kNew, kIdle, kReading, kHandling, kWriting, kLingering, kClosed };

  const HttpServerOptions& options() const { return server_.options(); }

  // Waits for the first byte of the next request, or parses one already buffered (pipelining).
  void wait(bool fresh) {
    if (state_ == State::kClosed) return;
    if (draining_) return close();
    parser_.emplace();
    parser_->body_limit(options().max_body_bytes);
    parser_->header_limit(
        static_cast<std::uint32_t>(std::min<std::size_t>(options().max_header_bytes, UINT32_MAX)));
    method_ = "-";
    path_ = "-";
    if (buffer_.size() > 0) return read_header();
    state_ = State::kIdle;
    stream_.expires_after(fresh ? options().read_timeout : options().idle_timeout);
    stream_.async_read_some(buffer_.prepare(kFirstReadSize),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              self->on_first_bytes(ec, n);
                            });
  }

  void on_first_bytes(const error_code& ec, std::size_t n) {
    if (state_ == State::kClosed) return;
    if (ec) return close();  // idle timeout, the client went away, or drain
    buffer_.commit(n);
    read_header();
  }

  void read_header() {
    state_ = State::kReading;
    stream_.expires_after(options().read_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(const error_code& ec) {
    if (state_ == State::kClosed) return;
    if (ec) return on_read_error(ec);
    if (parser_->is_done()) return on_request();
    const auto& request = parser_->get();
    const auto expect = request[http::field::expect];
    if (request.version() >= 11 && iequals(expect, "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this()](const error_code& write_ec, std::size_t) {
                          if (self->state_ == State::kClosed) return;
                          if (write_ec) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](const error_code& ec, std::size_t) {
                       if (self->state_ == State::kClosed) return;
                       if (ec) return self->on_read_error(ec);
                       self->on_request();
                     });
  }

  void remember_request_line() {
    const auto& request = parser_->get();
    const std::string_view method = request.method_string();
    const std::string_view target = request.target();
    if (!method.empty()) method_ = std::string(method);
    if (!target.empty()) path_ = std::string(target.substr(0, target.find('?')));
  }

  void on_read_error(const error_code& ec) {
    remember_request_line();
    if (ec == http::error::body_limit) {
      return respond_error(413, "request body is larger than " +
                                    std::to_string(options().max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return respond_error(431, "request headers are larger than " +
                                    std::to_string(options().max_header_bytes) + " bytes");
    }
    // The client went away, timed out or stopped half-way: there is nobody to answer.
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) return close();
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      return respond_error(400, "malformed request: " + ec.message());
    }
    close();  // timeout, reset, aborted
  }

  void on_request() {
    auto& message = parser_->get();
    remember_request_line();
    keep_alive_ = message.keep_alive();
    request_complete_ = true;
    http10_ = message.version() < 11;
    head_ = message.method() == http::verb::head;

    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.headers.reserve(
        static_cast<std::size_t>(std::distance(message.base().begin(), message.base().end())));
    for (const auto& field : message.base()) {
      request.headers.emplace_back(lowered(field.name_string()), std::string(field.value()));
    }
    request.body = std::move(message.body());
    request.peer_address = peer_;
    parser_.reset();

    state_ = State::kHandling;
    started_ = SteadyClock::now();
    ++sequence_;
    self_ = shared_from_this();  // alive until the handler answers or the connection closes
    call_handler(std::move(request));
  }

  void call_handler(HttpRequest request);

  void on_response(std::uint64_t sequence, HttpResponse response) {
    if (state_ != State::kHandling || sequence != sequence_) return;  // closed, or stale
    std::shared_ptr<Connection> keep = std::move(self_);
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

    std::string extra;
    for (const auto& [name, value] : response.headers) {
      if (!is_token(name) || !is_safe_value(value)) continue;
      if (iequals(name, "content-length") || iequals(name, "transfer-encoding")) continue;
      if (iequals(name, "connection")) {
        if (contains_token(value, "close")) keep_alive_ = false;
        continue;
      }
      extra.append(name).append(": ").append(value).append("\r\n");
    }

    const auto known = http::int_to_status(static_cast<unsigned>(status));
    std::string_view reason = "Unknown";
    if (known != http::status::unknown) {
      const auto text = http::obsolete_reason(known);
      reason = std::string_view(text.data(), text.size());
    }
    out_.clear();
    out_.append("HTTP/1.1 ").append(std::to_string(status)).append(" ");
    out_.append(reason.data(), reason.size()).append("\r\n");
    if (!response.content_type.empty() && is_safe_value(response.content_type)) {
      out_.append("Content-Type: ").append(response.content_type).append("\r\n");
    }
    if (!no_body) {
      out_.append("Content-Length: ").append(std::to_string(response.body.size())).append("\r\n");
    }
    out_.append(extra);
    if (!keep_alive_) {
      out_.append("Connection: close\r\n");
    } else if (http10_) {
      out_.append("Connection: keep-alive\r\n");
    }
    out_.append("\r\n");
    if (!no_body && !head_) out_.append(response.body);

    status_ = status;
    state_ = State::kWriting;
    stream_.expires_after(std::max(options().read_timeout, options().idle_timeout));
    asio::async_write(
        stream_, asio::buffer(out_),
        [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_written(ec); });
  }

  void on_written(const error_code& ec) {
    if (state_ == State::kClosed) return;
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started_);
    server_.log("method=" + method_ + " path=" + path_ + " status=" + std::to_string(status_) +
                " us=" + std::to_string(us.count()) + " peer=" + peer_);
    out_.clear();
    if (ec) return close();
    if (!keep_alive_ || draining_) return linger();
    wait(false);
  }

  // Stops sending, then reads and discards until the client closes (or a short deadline), so the
  // response is not lost to a reset caused by unread request bytes. Not needed when the request
  // was read completely and nothing follows it.
  void linger() {
    state_ = State::kLingering;
    error_code ec;
    if (request_complete_ && buffer_.size() == 0 && stream_.socket().available(ec) == 0 && !ec) {
      return close();
    }
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    buffer_.clear();
    stream_.expires_after(std::min(options().read_timeout, kMaxLinger));
    linger_read();
  }

  void linger_read() {
    stream_.async_read_some(buffer_.prepare(kFirstReadSize),
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
    stream_.close();
    parser_.reset();
    std::shared_ptr<Connection> keep = std::move(self_);
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
  const asio::any_io_executor strand_;  // the connection's strand, also the stream's executor
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const std::string peer_;
  const bool counted_;  // false for a connection rejected over max_connections
  State state_ = State::kNew;
  bool draining_ = false;
  bool keep_alive_ = true;
  bool head_ = false;
  bool http10_ = false;
  bool request_complete_ = false;  // the last request was read whole (no protocol error)
  bool released_ = false;
  std::uint64_t sequence_ = 0;  // of the request the handler is answering
  std::shared_ptr<Connection> self_;
  std::string out_;
  std::size_t lingered_ = 0;
  // For the access log.
  std::string method_ = "-";
  std::string path_ = "-";
  int status_ = 0;
  SteadyClock::time_point started_{};
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
    const std::shared_ptr<Server> server = server_.lock();  // keeps the io_context alive
    if (!server) return;
    const std::shared_ptr<Connection> connection = connection_.lock();
    if (!connection) return;
    connection->post_response(sequence_, std::move(response));
  }

 private:
  const std::weak_ptr<Server> server_;
  const std::weak_ptr<Connection> connection_;
  const std::uint64_t sequence_;
  std::atomic<bool> answered_{false};
};

void Connection::call_handler(HttpRequest request) {
  auto state =
      std::make_shared<ResponderState>(server_.weak_from_this(), weak_from_this(), sequence_);
  Responder responder = [state](HttpResponse response) { state->answer(std::move(response)); };
  try {
    server_.handler()(std::move(request), std::move(responder));
  } catch (const std::exception& e) {
    HttpResponse response;
    response.status = 500;
    response.body = error_body(std::string("the request handler failed: ") + e.what());
    state->answer(std::move(response));
  } catch (...) {
    HttpResponse response;
    response.status = 500;
    response.body = error_body("the request handler failed");
    state->answer(std::move(response));
  }
}

// ---- Server, continued ---------------------------------------------------------------------

void Server::log(std::string_view line) {
  const std::lock_guard lock(log_mutex_);
  try {
    options_.access_log(line);
  } catch (...) {  // a failing log sink must not take the server down
  }
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
  if (acceptor_.open(endpoint.protocol(), ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  if (acceptor_.set_option(asio::socket_base::reuse_address(true), ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  if (acceptor_.bind(endpoint, ec)) return failure(Errc::kUnavailable, at + ": " + cause(ec));
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec)) {
    return failure(Errc::kUnavailable, at + ": " + cause(ec));
  }
  const tcp::endpoint bound = acceptor_.local_endpoint(ec);
  if (ec) return failure(Errc::kUnavailable, at + ": " + cause(ec));
  port_ = bound.port();
  return {};
}

Result<void> Server::run() {
  asio::post(acceptor_.get_executor(), [this] { accept(); });
  std::string failed;
  for (int i = 0; i < options_.threads && failed.empty(); ++i) {
    {
      const std::lock_guard lock(mutex_);
      ++running_threads_;
    }
    try {
      threads_.emplace_back([this] {
        ioc_.run();
        const std::lock_guard lock(mutex_);
        --running_threads_;
        changed_.notify_all();
      });
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex_);
      --running_threads_;
      failed = e.what();
    }
  }
  if (failed.empty()) return {};
  stop(milliseconds(0));
  return failure(Errc::kUnavailable,
                 where(options_.host, port_) + ": cannot start a thread: " + failed);
}

void Server::accept() {
  acceptor_.async_accept(
      asio::make_strand(ioc_), peer_,
      [this](const error_code& ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void Server::on_accept(const error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;  // stop()
  if (ec) {
    // Out of descriptors or memory: pause instead of spinning; a connection that went away
    // before it was accepted (ECONNABORTED) just means accepting the next one.
    if (ec == asio::error::connection_aborted) return accept();
    accept_retry_.expires_after(kAcceptRetry);
    accept_retry_.async_wait([this](const error_code& wait_ec) {
      if (!wait_ec && acceptor_.is_open()) accept();
    });
    return;
  }
  const bool reject = open_.load(std::memory_order_acquire) >= options_.max_connections;
  auto connection =
      std::make_shared<Connection>(*this, std::move(socket), peer_text(peer_.address()), !reject);
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
  return std::any_of(threads_.begin(), threads_.end(),
                     [me](const std::thread& t) { return t.get_id() == me; });
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
  asio::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
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

  // 3. With no connection and no acceptor, the threads run out of work and return.
  work_.reset();
  {
    std::unique_lock lock(mutex_);
    const bool done = changed_.wait_for(
        lock, kStopGrace, [this] { return connections_.empty() && running_threads_ == 0; });
    if (!done) ioc_.stop();
  }
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();

  // 4. Connections the threads could not close (ioc_.stop() above) drop their self references,
  // so they go away with the io_context's queued handlers.
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [raw, weak] : connections_) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
  }
  for (const auto& connection : live) connection->abandon();
  live.clear();
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
