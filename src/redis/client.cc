// Client: one I/O thread (Boost.Asio), a pool of connections, automatic pipelining, per-call
// deadlines and background reconnection. See client.h for the contract.
//
// Everything below the public functions runs on the I/O thread, except format_command() (called
// by the caller) and the atomic `up_count_` read by connected(). Handlers capture raw pointers to
// the Impl and its Connections: both outlive the I/O thread, which is joined before they are
// destroyed. A connection attempt's socket and buffers live in a Session held by shared_ptr by
// every handler that uses them, so a dropped session stays valid until its last handler ran.
#include "src/redis/client.h"

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <deque>
#include <future>
#include <random>
#include <thread>
#include <utility>

#include "src/core/decimal.h"

namespace spillway::redis {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;
using Socket = asio::generic::stream_protocol::socket;
using GenericEndpoint = asio::generic::stream_protocol::endpoint;
using TlsStream = asio::ssl::stream<Socket&>;
using Callback = Client::Callback;

// ---- hiredis objects, owned -----------------------------------------------------------------

struct ReaderDeleter {
  void operator()(redisReader* reader) const { redisReaderFree(reader); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// ---- small helpers -------------------------------------------------------------------------

std::unexpected<Error> error(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

// The one place that decides what an I/O failure means for the caller.
Errc classify(const error_code& ec) {
  if (ec == asio::error::timed_out) return Errc::kTimeout;
  return Errc::kUnavailable;
}

// In the error of a call that was never written (never_sent).
constexpr std::string_view kNotConnected = ": not connected (";

std::string millis(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

// RESP encoding of one command, every argument a bulk string (binary safe):
// "*<count>\r\n" then "$<length>\r\n<bytes>\r\n" per argument, written in one allocation.
Result<std::string> format_command(const std::vector<std::string>& args) {
  if (args.empty()) return invalid_argument("redis command has no arguments");
  const auto append_header = [](std::string& out, char kind, std::size_t number) {
    out.push_back(kind);
    append_decimal(out, number);
    out.append("\r\n");
  };
  std::size_t size = 16;
  for (const std::string& arg : args) size += arg.size() + 24;
  std::string out;
  out.reserve(size);
  append_header(out, '*', args.size());
  for (const std::string& arg : args) {
    append_header(out, '$', arg.size());
    out.append(arg).append("\r\n");
  }
  return out;
}

Reply convert(const redisReply& raw) {
  Reply reply;
  switch (raw.type) {
    case REDIS_REPLY_STRING:
      reply.type = Reply::Type::kString;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_STATUS:
      reply.type = Reply::Type::kStatus;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_ERROR:
      reply.type = Reply::Type::kError;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::kInteger;
      reply.integer = raw.integer;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::kArray;
      reply.elements.reserve(raw.elements);
      for (std::size_t i = 0; i < raw.elements; ++i)
        reply.elements.push_back(convert(*raw.element[i]));
      break;
    default:  // REDIS_REPLY_NIL
      reply.type = Reply::Type::kNil;
      break;
  }
  return reply;
}

// Runs `done` once and leaves it empty, so a slot can never be completed twice.
void complete(Callback& done, Result<Reply> result) {
  Callback callback = std::move(done);
  done = nullptr;
  if (callback) callback(std::move(result));
}

std::string describe(const ClientOptions& options) {
  if (!options.unix_socket.empty()) return "redis unix:" + options.unix_socket;
  const std::string what = options.tls ? "redis (TLS) " : "redis ";
  if (options.host.find(':') != std::string::npos) {
    return what + "[" + options.host + "]:" + std::to_string(options.port);
  }
  return what + options.host + ":" + std::to_string(options.port);
}

// Why a TLS handshake failed, in words: the certificate check's verdict when there is one
// ("certificate has expired", "hostname mismatch"), else OpenSSL's reason.
std::string tls_failure(TlsStream& stream, const error_code& ec) {
  const long verdict = SSL_get_verify_result(stream.native_handle());
  if (verdict != X509_V_OK) {
    return std::string("TLS handshake failed: server certificate rejected: ") +
           X509_verify_cert_error_string(verdict);
  }
  std::string text = "TLS handshake failed: " + ec.message();
  if (ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER) {
    text += " (is this a plain-TCP port? then use redis://)";
  }
  return text;
}

ClientOptions normalized(ClientOptions options) {
  using std::chrono::milliseconds;
  options.pool_size = std::max(options.pool_size, 1);
  options.timeout = std::max(options.timeout, milliseconds(1));
  options.connect_timeout = std::max(options.connect_timeout, milliseconds(1));
  options.reconnect_min = std::max(options.reconnect_min, milliseconds(1));
  options.reconnect_max = std::max(options.reconnect_max, options.reconnect_min);
  options.max_connects_per_second = std::max(options.max_connects_per_second, 1);
  return options;
}

}  // namespace

// ---- Impl ----------------------------------------------------------------------------------

class Client::Impl {
 public:
  explicit Impl(ClientOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // asking: ASKING goes first on the same connection (Redis Cluster's ASK redirection).
  void submit(Result<std::string> command, Callback done, SteadyClock::time_point deadline,
              bool asking = false) {
    asio::post(io_, [this, command = std::move(command), done = std::move(done), deadline,
                     asking]() mutable {
      dispatch(std::move(command), std::move(done), deadline, asking);
    });
  }

  // Idempotent; must not run on the I/O thread.
  void shutdown();

  bool connected() const { return up_count_.load(std::memory_order_acquire) > 0; }
  bool on_io_thread() { return io_.get_executor().running_in_this_thread(); }

 private:
  class Connection;

  void dispatch(Result<std::string> command, Callback done, SteadyClock::time_point deadline,
                bool asking);

  const ClientOptions options_;
  const std::string where_;  // "redis host:port", prefix of every error message
  // rediss://: the TLS context, or why it could not be built (every attempt then fails with it).
  std::shared_ptr<asio::ssl::context> tls_context_;
  std::string tls_context_error_;
  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<int> up_count_{0};
  // When the pool's next connection attempt may start: a GCRA over the attempts, at most
  // max_connects_per_second of them per second with a burst of as many. I/O thread only.
  SteadyClock::time_point next_connect_slot() {
    const auto now = SteadyClock::now();
    const auto interval =
        std::chrono::duration_cast<SteadyClock::duration>(std::chrono::seconds(1)) /
        options_.max_connects_per_second;
    connect_tat_ = std::max(connect_tat_, now) + interval;
    return std::max(now, connect_tat_ - interval * options_.max_connects_per_second);
  }

  // I/O thread only:
  bool stopping_ = false;
  std::size_t next_ = 0;
  SteadyClock::time_point connect_tat_{};
  std::minstd_rand jitter_{std::random_device{}()};
  std::thread thread_;  // last: started when everything else exists
};

// One connection of the pool and its reconnection loop.
class Client::Impl::Connection {
 public:
  explicit Connection(Impl& impl)
      : impl_(impl),
        options_(impl.options_),
        call_timer_(impl.io_),
        backoff_timer_(impl.io_),
        resolver_(impl.io_),
        backoff_(options_.reconnect_min) {}

  bool up() const { return state_ == State::kUp; }
  // The first attempt after construction queues calls instead of failing them, so that a client
  // used right after it was created does not fail while it is still connecting.
  bool queues_calls() const { return state_ == State::kConnecting && first_attempt_; }
  const std::string& last_cause() const { return last_cause_; }

  void send(std::string command, Callback done, SteadyClock::time_point deadline) {
    if (state_ == State::kUp) {
      session_->output += command;
      session_->pending.push_back(Pending{Kind::kUser, std::move(done), deadline});
      start_write(session_);
    } else {
      waiting_.push_back(Waiting{std::move(command), std::move(done), deadline});
    }
    arm_call_timer(deadline);
  }

  // Starts an attempt now, or when the pool's attempt budget allows (see next_connect_slot).
  void connect() {
    if (impl_.stopping_) return;
    const SteadyClock::time_point start = impl_.next_connect_slot();
    if (start > SteadyClock::now()) {
      backoff_timer_.expires_at(start);
      backoff_timer_.async_wait([this](const error_code& ec) {
        if (ec || impl_.stopping_) return;
        attempt();
      });
      return;
    }
    attempt();
  }

  void attempt() {
    state_ = State::kConnecting;
    auto session = std::make_shared<Session>(impl_.io_);
    session_ = session;
    if (!session->reader) {
      fail(Errc::kInternal, "cannot create a RESP reader");
      return;
    }
    session->connect_timer.expires_after(options_.connect_timeout);
    session->connect_timer.async_wait([this, session](const error_code& ec) {
      if (ec || session != session_ || state_ != State::kConnecting) return;
      if (!session->write_error.empty()) return fail(Errc::kUnavailable, session->write_error);
      if (session->tls) {  // connected, but the server never finished the TLS handshake
        return fail(Errc::kUnavailable, "TLS handshake timed out after " +
                                            millis(options_.connect_timeout) +
                                            " (is this a plain-TCP port? then use redis://)");
      }
      fail(classify(asio::error::timed_out),
           "connect timed out after " + millis(options_.connect_timeout));
    });

    if (!options_.unix_socket.empty()) {
      // asio would throw for a path that does not fit in sockaddr_un: check it here instead.
      if (options_.unix_socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
        fail(Errc::kUnavailable, "unix socket path is too long");
        return;
      }
      const asio::local::stream_protocol::endpoint endpoint(options_.unix_socket);
      session->socket.async_connect(
          GenericEndpoint(endpoint),
          [this, session](const error_code& ec) { on_connect(session, ec); });
      return;
    }
    error_code parse_error;
    const asio::ip::address address = asio::ip::make_address(options_.host, parse_error);
    if (!parse_error) {
      const asio::ip::tcp::endpoint endpoint(address, options_.port);
      session->socket.async_connect(
          GenericEndpoint(endpoint),
          [this, session](const error_code& ec) { on_connect(session, ec); });
      return;
    }
    resolver_.async_resolve(
        options_.host, std::to_string(options_.port),
        [this, session](const error_code& ec, const asio::ip::tcp::resolver::results_type& found) {
          if (session != session_) return;
          if (ec) {
            fail(classify(ec), "cannot resolve host: " + ec.message());
            return;
          }
          std::vector<GenericEndpoint> endpoints;
          for (const auto& entry : found) endpoints.emplace_back(entry.endpoint());
          asio::async_connect(
              session->socket, endpoints,
              [this, session](const error_code& connect_error, const GenericEndpoint&) {
                on_connect(session, connect_error);
              });
        });
  }

  // Shutdown (I/O thread, after impl_.stopping_ was set): fails every call and cancels all work.
  void stop() {
    call_timer_.cancel();
    backoff_timer_.cancel();
    resolver_.cancel();
    fail(Errc::kUnavailable, "the client is shutting down");
  }

 private:
  enum class State { kConnecting, kUp, kDown, kStopped };
  enum class Kind { kUser, kExpired, kPing, kAuth, kSelect };

  // A command whose reply is awaited, in send order.
  struct Pending {
    Kind kind;
    Callback done;  // kUser only
    SteadyClock::time_point deadline;
  };
  // A call queued while the first connection attempt is in progress.
  struct Waiting {
    std::string command;
    Callback done;
    SteadyClock::time_point deadline;
  };
  // One connection attempt: its socket, parser and buffers.
  struct Session {
    explicit Session(asio::io_context& io)
        : socket(io), connect_timer(io), reader(redisReaderCreate()) {}
    Socket socket;
    std::unique_ptr<TlsStream> tls;  // over `socket` (declared after it: destroyed first)
    std::string write_error;  // a write that failed while connecting over TLS (see start_write)
    asio::steady_timer connect_timer;
    ReaderPtr reader;
    std::array<char, 16 * 1024> input{};
    std::string output;     // commands for the next write
    std::string in_flight;  // bytes of the write in progress
    bool writing = false;
    std::deque<Pending> pending;
    int handshake_left = 0;    // PING / AUTH / SELECT replies still expected
    bool got_a_reply = false;  // for a clearer error when the server hangs up at once

    template <typename Handler>
    void read_some(Handler&& handler) {
      if (tls) return tls->async_read_some(asio::buffer(input), std::forward<Handler>(handler));
      socket.async_read_some(asio::buffer(input), std::forward<Handler>(handler));
    }
    template <typename Handler>
    void write_all(Handler&& handler) {
      if (tls)
        return asio::async_write(*tls, asio::buffer(in_flight), std::forward<Handler>(handler));
      asio::async_write(socket, asio::buffer(in_flight), std::forward<Handler>(handler));
    }
  };

  void on_connect(const std::shared_ptr<Session>& session, const error_code& ec) {
    if (session != session_) return;
    if (ec) {
      fail(classify(ec), "connect failed: " + ec.message());
      return;
    }
    if (options_.unix_socket.empty()) {
      error_code ignored;
      session->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
      session->socket.set_option(asio::socket_base::keep_alive(true), ignored);
    }
    if (!options_.tls) return start_session(session);
    if (!impl_.tls_context_) return fail(Errc::kUnavailable, impl_.tls_context_error_);
    session->tls = std::make_unique<TlsStream>(session->socket, *impl_.tls_context_);
    SSL* ssl = session->tls->native_handle();
    const std::string& name =
        options_.tls->server_name.empty() ? options_.host : options_.tls->server_name;
    error_code not_ip;
    asio::ip::make_address(name, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl, name.c_str());  // SNI takes names only
    if (!options_.tls->insecure) {
      // The certificate must name this host (an IP address: an IP SAN), checked by OpenSSL during
      // the handshake so that a mismatch is reported as such.
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      if (not_ip) {
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      } else {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      }
    }
    session->tls->async_handshake(
        asio::ssl::stream_base::client, [this, session](const error_code& handshake_error) {
          if (session != session_) return;
          if (handshake_error) {
            return fail(Errc::kUnavailable, tls_failure(*session->tls, handshake_error));
          }
          start_session(session);
        });
  }

  // The connection carries bytes: the handshake commands (PING over TLS, so that a server that
  // refuses our certificate after its handshake is caught here; AUTH; SELECT), then calls.
  void start_session(const std::shared_ptr<Session>& session) {
    start_read(session);
    if (options_.tls && !queue_handshake(session, {"PING"}, Kind::kPing)) return;
    if (options_.password) {
      std::vector<std::string> auth{"AUTH"};
      if (options_.user) auth.push_back(*options_.user);
      auth.push_back(*options_.password);
      if (!queue_handshake(session, auth, Kind::kAuth)) return;
    }
    if (options_.db != 0) {
      if (!queue_handshake(session, {"SELECT", std::to_string(options_.db)}, Kind::kSelect)) {
        return;
      }
    }
    if (session->handshake_left == 0) {
      on_up(session);
    } else {
      start_write(session);
    }
  }

  bool queue_handshake(const std::shared_ptr<Session>& session,
                       const std::vector<std::string>& args, Kind kind) {
    Result<std::string> command = format_command(args);
    if (!command) {
      fail(Errc::kInternal, "cannot format " + args[0]);
      return false;
    }
    session->output += *command;
    session->pending.push_back(Pending{kind, nullptr, SteadyClock::time_point::max()});
    ++session->handshake_left;
    return true;
  }

  void on_up(const std::shared_ptr<Session>& session) {
    state_ = State::kUp;
    first_attempt_ = false;
    backoff_ = options_.reconnect_min;
    last_cause_.clear();
    session->connect_timer.cancel();
    impl_.up_count_.fetch_add(1, std::memory_order_release);
    for (Waiting& waiting : waiting_) {
      session->output += waiting.command;
      session->pending.push_back(Pending{Kind::kUser, std::move(waiting.done), waiting.deadline});
    }
    waiting_.clear();
    start_write(session);
  }

  void start_write(const std::shared_ptr<Session>& session) {
    if (session->writing || session->output.empty()) return;
    session->in_flight.swap(session->output);  // in_flight was empty: output starts afresh
    session->writing = true;
    session->write_all([this, session](const error_code& ec, std::size_t) {
      session->writing = false;
      session->in_flight.clear();
      if (session != session_) return;
      if (ec) {
        // While connecting, the reader tells why: a server that refuses our certificate sends
        // its alert and closes, and a write after that fails with a bare "reset" while the alert
        // is still waiting to be read. The connect timer bounds the wait.
        if (session->tls && state_ == State::kConnecting) {
          session->write_error = "write failed: " + ec.message();  // if the reader stays silent
          return;
        }
        fail(classify(ec), "write failed: " + ec.message());
        return;
      }
      start_write(session);
    });
  }

  void start_read(const std::shared_ptr<Session>& session) {
    session->read_some([this, session](const error_code& ec, std::size_t size) {
      if (session != session_) return;
      if (ec) {
        fail(classify(ec), lost_connection(*session, ec));
        return;
      }
      session->got_a_reply = true;
      redisReader* reader = session->reader.get();
      if (redisReaderFeed(reader, session->input.data(), size) != REDIS_OK) {
        fail(Errc::kUnavailable, std::string("protocol error: ") + reader->errstr);
        return;
      }
      for (;;) {
        void* raw = nullptr;
        if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
          fail(Errc::kUnavailable, std::string("protocol error: ") + reader->errstr);
          return;
        }
        if (raw == nullptr) break;
        const ReplyPtr owned(static_cast<redisReply*>(raw));
        on_reply(session, convert(*owned));
        if (session != session_) return;  // the reply failed the connection
      }
      start_read(session);
    });
  }

  std::string lost_connection(const Session& session, const error_code& ec) const {
    const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
    const bool refused_at_once =
        (closed || ec == asio::error::connection_reset) && !session.got_a_reply;
    if (refused_at_once && !options_.tls && options_.unix_socket.empty()) {
      return "connection closed by the server before any reply (is this a TLS port? then use "
             "rediss://)";
    }
    if (closed) return "connection closed by the server";
    return (session.tls ? "connection lost (TLS): " : "connection lost: ") + ec.message();
  }

  void on_reply(const std::shared_ptr<Session>& session, Reply reply) {
    if (session->pending.empty()) {
      fail(Errc::kUnavailable, "protocol error: a reply arrived that no command was waiting for");
      return;
    }
    Pending pending = std::move(session->pending.front());
    session->pending.pop_front();
    switch (pending.kind) {
      case Kind::kUser:
        complete(pending.done, std::move(reply));
        return;
      case Kind::kPing:
        if (reply.is_error() && !reply.text.starts_with("NOAUTH")) {
          fail(Errc::kUnavailable, "PING failed: " + reply.text);
          return;
        }
        if (--session->handshake_left == 0) on_up(session);
        return;
      case Kind::kAuth:
      case Kind::kSelect:
        if (reply.is_error()) {
          fail(Errc::kUnavailable, (pending.kind == Kind::kAuth
                                        ? std::string("AUTH failed: ")
                                        : "SELECT " + std::to_string(options_.db) + " failed: ") +
                                       reply.text);
          return;
        }
        if (--session->handshake_left == 0) on_up(session);
        return;
      case Kind::kExpired:
        return;
    }
  }

  // One timer per connection, set for the earliest deadline of the calls it holds. Calls may
  // carry any deadline (a caller's own, earlier than the timeout), so a fire scans them all; in
  // steady state it fires about once per timeout.
  void arm_call_timer(SteadyClock::time_point deadline) {
    if (call_timer_armed_ && call_timer_at_ <= deadline) return;  // it re-arms when it fires
    call_timer_armed_ = true;
    call_timer_at_ = deadline;
    const std::uint64_t generation = ++call_timer_generation_;
    call_timer_.expires_at(deadline);  // cancels an earlier wait (its generation is stale)
    call_timer_.async_wait([this, generation](const error_code& ec) {
      if (ec == asio::error::operation_aborted || generation != call_timer_generation_) return;
      call_timer_armed_ = false;
      if (!impl_.stopping_) expire_calls();
    });
  }

  void expire_calls() {
    const SteadyClock::time_point now = SteadyClock::now();
    const std::string message = impl_.where_ + ": no reply in time (timeout " +
                                millis(options_.timeout) + ", including time queued)";
    std::optional<SteadyClock::time_point> next;
    const auto consider = [&next](SteadyClock::time_point deadline) {
      next = next ? std::min(*next, deadline) : deadline;
    };
    if (session_) {
      for (Pending& pending : session_->pending) {
        if (pending.kind != Kind::kUser) continue;
        if (pending.deadline > now) {
          consider(pending.deadline);
          continue;
        }
        pending.kind = Kind::kExpired;  // the slot stays: its reply will come and is dropped
        complete(pending.done, error(Errc::kTimeout, message));
      }
    }
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->deadline > now) {
        consider(it->deadline);
        ++it;
        continue;
      }
      Callback done = std::move(it->done);
      it = waiting_.erase(it);
      complete(done, error(Errc::kTimeout, message + " (still connecting)"));
    }
    if (next) arm_call_timer(*next);
  }

  // Drops the current session (if any), fails every call it holds and schedules a reconnect.
  void fail(Errc code, const std::string& cause) {
    if (state_ == State::kUp) impl_.up_count_.fetch_sub(1, std::memory_order_release);
    last_cause_ = cause;
    first_attempt_ = false;
    std::deque<Pending> pending;
    if (session_) {
      const std::shared_ptr<Session> session = std::move(session_);
      session_.reset();
      error_code ignored;
      session->connect_timer.cancel();
      session->socket.close(ignored);  // its handlers run with operation_aborted and return
      pending = std::move(session->pending);
    }
    std::deque<Waiting> waiting = std::move(waiting_);
    waiting_.clear();
    state_ = impl_.stopping_ ? State::kStopped : State::kDown;

    const std::string message = impl_.where_ + ": " + cause;
    for (Pending& entry : pending) {
      if (entry.kind == Kind::kUser) complete(entry.done, error(code, message));
    }
    // Calls queued during the first attempt were never written: never_sent() says so.
    const std::string unsent = impl_.where_ + std::string(kNotConnected) + cause + ")";
    for (Waiting& entry : waiting) complete(entry.done, error(code, unsent));

    if (state_ == State::kDown) {
      // A random wait in [backoff/2, backoff]: clients that lost the server together do not all
      // come back in the same instant.
      const auto half = backoff_ / 2;
      std::uniform_int_distribution<long long> spread(0, (backoff_ - half).count());
      backoff_timer_.expires_after(half + std::chrono::milliseconds(spread(impl_.jitter_)));
      backoff_timer_.async_wait([this](const error_code& ec) {
        if (ec || impl_.stopping_) return;
        connect();
      });
      backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
    }
  }

  Impl& impl_;
  const ClientOptions& options_;
  State state_ = State::kDown;
  bool first_attempt_ = true;
  std::shared_ptr<Session> session_;
  std::deque<Waiting> waiting_;
  asio::steady_timer call_timer_;
  bool call_timer_armed_ = false;
  SteadyClock::time_point call_timer_at_{};
  std::uint64_t call_timer_generation_ = 0;
  asio::steady_timer backoff_timer_;
  asio::ip::tcp::resolver resolver_;
  std::chrono::milliseconds backoff_;
  std::string last_cause_ = "not connected yet";
};

Client::Impl::Impl(ClientOptions options)
    : options_(normalized(std::move(options))),
      where_(describe(options_)),
      work_(asio::make_work_guard(io_)) {
  if (options_.tls) {
    Result<std::shared_ptr<asio::ssl::context>> context = make_tls_context(*options_.tls);
    if (context) {
      tls_context_ = std::move(*context);
    } else {
      tls_context_error_ = context.error().message;
    }
  }
  connections_.reserve(static_cast<std::size_t>(options_.pool_size));
  for (int i = 0; i < options_.pool_size; ++i) {
    connections_.push_back(std::make_unique<Connection>(*this));
  }
  for (auto& connection : connections_) {
    asio::post(io_, [target = connection.get()] { target->connect(); });
  }
  thread_ = std::thread([this] { io_.run(); });
}

Client::Impl::~Impl() { shutdown(); }

void Client::Impl::shutdown() {
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {
    stopping_ = true;
    for (auto& connection : connections_) connection->stop();
  });
  work_.reset();  // run() returns once the aborted operations have completed
  thread_.join();
}

void Client::Impl::dispatch(Result<std::string> command, Callback done,
                            SteadyClock::time_point deadline, bool asking) {
  if (!command) {
    complete(done, std::unexpected(command.error()));
    return;
  }
  if (stopping_) {
    complete(done, error(Errc::kUnavailable, where_ + ": the client is shutting down"));
    return;
  }
  // Round-robin, skipping connections that are down; a connection still in its first attempt
  // takes calls only when no connection is up.
  const std::size_t count = connections_.size();
  const std::size_t first = next_++ % count;
  Connection* target = nullptr;
  for (std::size_t i = 0; i < count && target == nullptr; ++i) {
    Connection* candidate = connections_[(first + i) % count].get();
    if (candidate->up()) target = candidate;
  }
  for (std::size_t i = 0; i < count && target == nullptr; ++i) {
    Connection* candidate = connections_[(first + i) % count].get();
    if (candidate->queues_calls()) target = candidate;
  }
  if (target == nullptr) {
    complete(done, error(Errc::kUnavailable, where_ + std::string(kNotConnected) +
                                                 connections_[first]->last_cause() + ")"));
    return;
  }
  const SteadyClock::time_point now = SteadyClock::now();
  deadline = std::min(deadline, now + options_.timeout);
  if (deadline <= now) {
    complete(done,
             error(Errc::kTimeout, where_ + ": the call's time was spent before it was sent"));
    return;
  }
  if (asking) {
    // A call of its own (so that the timeout scan treats it like any other), whose reply is
    // dropped; nothing can come between it and the command on this thread.
    static const std::string kAsking = *format_command({"ASKING"});
    target->send(
        kAsking, [](Result<Reply>) {}, deadline);
  }
  target->send(std::move(*command), std::move(done), deadline);
}

// ---- Client --------------------------------------------------------------------------------

Client::Client(ClientOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

Client::~Client() { impl_->shutdown(); }

Result<Reply> Client::call(const std::vector<std::string>& args) {
  if (impl_->on_io_thread()) {
    return error(Errc::kInternal,
                 "redis Client::call() on the client's I/O thread would deadlock; use call_async");
  }
  auto promise = std::make_shared<std::promise<Result<Reply>>>();
  std::future<Result<Reply>> future = promise->get_future();
  call_async(args, [promise](Result<Reply> result) { promise->set_value(std::move(result)); });
  return future.get();
}

void Client::call_async(const std::vector<std::string>& args, Callback done) {
  impl_->submit(format_command(args), std::move(done), SteadyClock::time_point::max());
}

void Client::call_async(const std::vector<std::string>& args, Deadline deadline, Callback done) {
  impl_->submit(format_command(args), std::move(done), deadline);
}

void Client::call_async_asking(const std::vector<std::string>& args, Deadline deadline,
                               Callback done) {
  impl_->submit(format_command(args), std::move(done), deadline, true);
}

bool Client::connected() const { return impl_->connected(); }

bool never_sent(const Error& error) {
  return (error.code == Errc::kUnavailable || error.code == Errc::kTimeout) &&
         error.message.find(kNotConnected) != std::string::npos;
}

}  // namespace spillway::redis
