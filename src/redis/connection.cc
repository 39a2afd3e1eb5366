// Connection and PoolContext (see connection.h).
#include "src/redis/connection.h"

#include <sys/un.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <optional>
#include <vector>

#include "src/redis/tls.h"
#include "src/redis/tls_handshake.h"

namespace spillway::redis {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using GenericEndpoint = asio::generic::stream_protocol::endpoint;

std::unexpected<Error> error(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

// The one place that decides what an I/O failure means for the caller.
Errc classify(const error_code& ec) {
  if (ec == asio::error::timed_out) return Errc::kTimeout;
  return Errc::kUnavailable;
}

std::string millis(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

std::string describe(const ClientOptions& options) {
  if (!options.unix_socket.empty()) return "redis unix:" + options.unix_socket;
  const std::string what = options.tls ? "redis (TLS) " : "redis ";
  if (options.host.find(':') != std::string::npos) {
    return what + "[" + options.host + "]:" + std::to_string(options.port);
  }
  return what + options.host + ":" + std::to_string(options.port);
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

void complete(Client::Callback& done, Result<Reply> result) {
  Client::Callback callback = std::move(done);
  done = nullptr;
  if (callback) callback(std::move(result));
}

Error not_connected(Errc code, const std::string& where, const std::string& cause) {
  return Error{code, where + std::string(kNotConnected) + cause + ")"};
}

// ---- PoolContext ---------------------------------------------------------------------------

PoolContext::PoolContext(ClientOptions options_in)
    : options(normalized(std::move(options_in))), where(describe(options)) {
  if (!options.tls) return;
  Result<std::shared_ptr<asio::ssl::context>> context = make_tls_context(*options.tls);
  if (context) {
    tls_context = std::move(*context);
  } else {
    tls_context_error = context.error().message;
  }
}

Client::Deadline PoolContext::next_connect_slot() {
  const auto now = socket_now();
  const auto interval = std::chrono::duration_cast<SocketClock::duration>(std::chrono::seconds(1)) /
                        options.max_connects_per_second;
  connect_tat_ = std::max(connect_tat_, now) + interval;
  return std::max(now, connect_tat_ - interval * options.max_connects_per_second);
}

// ---- Connection: calls in ------------------------------------------------------------------

Connection::Connection(PoolContext& pool)
    : pool_(pool),
      options_(pool.options),
      call_timer_(pool.io),
      backoff_timer_(pool.io),
      resolver_(pool.io),
      backoff_(options_.reconnect_min) {}

template <typename Handler>
void Connection::Session::read_some(Handler&& handler) {
  if (tls) return tls->async_read_some(asio::buffer(input), std::forward<Handler>(handler));
  socket.async_read_some(asio::buffer(input), std::forward<Handler>(handler));
}

template <typename Handler>
void Connection::Session::write_all(Handler&& handler) {
  if (tls) return asio::async_write(*tls, asio::buffer(in_flight), std::forward<Handler>(handler));
  asio::async_write(socket, asio::buffer(in_flight), std::forward<Handler>(handler));
}

void Connection::send(std::string command, Client::Callback done, Client::Deadline deadline) {
  if (state_ == State::kUp) {
    session_->output += command;
    session_->await(Pending{Kind::kUser, std::move(done), deadline});
    start_write(session_);
  } else {
    waiting_.push_back(Waiting{std::move(command), std::move(done), deadline});
  }
  arm_call_timer(deadline);
}

// ---- Connection: connecting ----------------------------------------------------------------

void Connection::connect() {
  if (pool_.stopping) return;
  const SocketClock::time_point start = pool_.next_connect_slot();
  if (start > socket_now()) {
    backoff_timer_.expires_at(start);
    backoff_timer_.async_wait([this](const error_code& ec) {
      if (ec || pool_.stopping) return;
      attempt();
    });
    return;
  }
  attempt();
}

void Connection::attempt() {
  state_ = State::kConnecting;
  auto session = std::make_shared<Session>(pool_.io);
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
    session->socket.async_connect(GenericEndpoint(endpoint), [this, session](const error_code& ec) {
      on_connect(session, ec);
    });
    return;
  }
  error_code parse_error;
  const asio::ip::address address = asio::ip::make_address(options_.host, parse_error);
  if (!parse_error) {
    const asio::ip::tcp::endpoint endpoint(address, options_.port);
    session->socket.async_connect(GenericEndpoint(endpoint), [this, session](const error_code& ec) {
      on_connect(session, ec);
    });
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

void Connection::stop() {
  call_timer_.cancel();
  backoff_timer_.cancel();
  resolver_.cancel();
  fail(Errc::kUnavailable, "the client is shutting down");
}

void Connection::on_connect(const std::shared_ptr<Session>& session, const error_code& ec) {
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
  if (!pool_.tls_context) return fail(Errc::kUnavailable, pool_.tls_context_error);
  session->tls = std::make_unique<TlsStream>(session->socket, *pool_.tls_context);
  prepare_tls_client(session->tls->native_handle(),
                     options_.tls->server_name.empty() ? options_.host : options_.tls->server_name,
                     options_.tls->insecure);
  session->tls->async_handshake(
      asio::ssl::stream_base::client, [this, session](const error_code& handshake_error) {
        if (session != session_) return;
        if (handshake_error) {
          return fail(Errc::kUnavailable,
                      tls_failure(session->tls->native_handle(), handshake_error));
        }
        start_session(session);
      });
}

// The connection carries bytes: the handshake commands (PING over TLS, so that a server that
// refuses our certificate after its handshake is caught here; AUTH; SELECT), then calls.
void Connection::start_session(const std::shared_ptr<Session>& session) {
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

bool Connection::queue_handshake(const std::shared_ptr<Session>& session,
                                 const std::vector<std::string>& args, Kind kind) {
  Result<std::string> command = format_command(args);
  if (!command) {
    fail(Errc::kInternal, "cannot format " + args[0]);
    return false;
  }
  session->output += *command;
  session->await(Pending{kind, nullptr, SocketClock::time_point::max()});
  ++session->handshake_left;
  return true;
}

void Connection::on_up(const std::shared_ptr<Session>& session) {
  state_ = State::kUp;
  first_attempt_ = false;
  backoff_ = options_.reconnect_min;
  last_cause_.clear();
  session->connect_timer.cancel();
  pool_.up_count.fetch_add(1, std::memory_order_release);
  for (Waiting& waiting : waiting_) {
    session->output += waiting.command;
    session->await(Pending{Kind::kUser, std::move(waiting.done), waiting.deadline});
  }
  waiting_.clear();
  start_write(session);
}

// ---- Connection: bytes out and in ----------------------------------------------------------

void Connection::start_write(const std::shared_ptr<Session>& session) {
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

void Connection::start_read(const std::shared_ptr<Session>& session) {
  session->read_some([this, session](const error_code& ec, std::size_t size) {
    if (session != session_) return;
    if (ec) {
      fail(classify(ec), lost_connection(*session, ec));
      return;
    }
    session->got_a_reply = true;
    session->last_heard = socket_now();
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

std::string Connection::lost_connection(const Session& session, const error_code& ec) const {
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

void Connection::on_reply(const std::shared_ptr<Session>& session, Reply reply) {
  if (session->pending.empty()) {
    if (options_.on_push) return options_.on_push(std::move(reply));
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
        fail(Errc::kUnavailable,
             (pending.kind == Kind::kAuth ? std::string("AUTH failed: ")
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

// ---- Connection: deadlines and failures ----------------------------------------------------

// Calls may carry any deadline (a caller's own, earlier than the timeout), so a fire scans them
// all; in steady state it fires about once per timeout.
void Connection::arm_call_timer(Client::Deadline deadline) {
  if (call_timer_armed_ && call_timer_at_ <= deadline) return;  // it re-arms when it fires
  call_timer_armed_ = true;
  call_timer_at_ = deadline;
  const std::uint64_t generation = ++call_timer_generation_;
  call_timer_.expires_at(deadline);  // cancels an earlier wait (its generation is stale)
  call_timer_.async_wait([this, generation](const error_code& ec) {
    if (ec == asio::error::operation_aborted || generation != call_timer_generation_) return;
    call_timer_armed_ = false;
    if (!pool_.stopping) expire_calls();
  });
}

void Connection::expire_calls() {
  const SocketClock::time_point now = socket_now();
  const std::string message = pool_.where + ": no reply in time (timeout " +
                              millis(options_.timeout) + ", including time queued)";
  std::optional<SocketClock::time_point> next;
  const auto consider = [&next](SocketClock::time_point deadline) {
    next = next ? std::min(*next, deadline) : deadline;
  };
  bool expired = false;
  if (session_) {
    for (Pending& pending : session_->pending) {
      if (pending.kind != Kind::kUser) continue;
      if (pending.deadline > now) {
        consider(pending.deadline);
        continue;
      }
      pending.kind = Kind::kExpired;  // the slot stays: its reply will come and is dropped
      complete(pending.done, error(Errc::kTimeout, message));
      expired = true;
    }
  }
  const auto silence_limit = std::max<std::chrono::milliseconds>(options_.timeout, kSilenceLimit);
  if (expired && state_ == State::kUp && now - session_->last_heard >= silence_limit) {
    fail(Errc::kUnavailable, "no reply for " + millis(silence_limit) +
                                 " while calls waited (the server or the path to it hangs): "
                                 "connection dropped");
    return;
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->deadline > now) {
      consider(it->deadline);
      ++it;
      continue;
    }
    Client::Callback done = std::move(it->done);
    it = waiting_.erase(it);
    complete(done, error(Errc::kTimeout, message + " (still connecting)"));
  }
  if (next) arm_call_timer(*next);
}

void Connection::fail(Errc code, const std::string& cause) {
  if (state_ == State::kUp) pool_.up_count.fetch_sub(1, std::memory_order_release);
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
  state_ = pool_.stopping ? State::kStopped : State::kDown;

  const std::string message = pool_.where + ": " + cause;
  for (Pending& entry : pending) {
    if (entry.kind == Kind::kUser) complete(entry.done, error(code, message));
  }
  // Calls queued during the first attempt were never written: never_sent() says so.
  for (Waiting& entry : waiting) {
    complete(entry.done, std::unexpected(not_connected(code, pool_.where, cause)));
  }

  if (state_ == State::kDown) {
    // A random wait in [backoff/2, backoff]: clients that lost the server together do not all
    // come back in the same instant.
    const auto half = backoff_ / 2;
    std::uniform_int_distribution<long long> spread(0, (backoff_ - half).count());
    backoff_timer_.expires_after(half + std::chrono::milliseconds(spread(pool_.jitter)));
    backoff_timer_.async_wait([this](const error_code& ec) {
      if (ec || pool_.stopping) return;
      connect();
    });
    backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
  }
}

}  // namespace spillway::redis
