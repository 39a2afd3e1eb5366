// One connection of a Client's pool, with its reconnection loop, and the pool's state that its
// connections share. The contract (pipelining, deadlines, backoff, TLS) is client.h's; the pool
// that spreads calls over connections is Client::Impl in client.cc.
//
// Threading: everything here runs on the pool's I/O thread, except PoolContext::up_count (read
// by Client::connected()). Ownership: the Client's Impl owns the PoolContext and the Connections;
// handlers capture raw pointers to them (both outlive the I/O thread, which is joined before they
// are destroyed). A connection attempt's socket and buffers live in a Session held by shared_ptr
// by every handler that uses them, so a dropped session stays valid until its last handler ran.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/redis/client.h"
#include "src/redis/resp.h"

namespace spillway::redis {

// Runs `done` once and leaves it empty, so a slot can never be completed twice.
void complete(Client::Callback& done, Result<Reply> result);

// The error of a call that no connection took: "<where>: not connected (<cause>)". never_sent()
// recognises it by kNotConnected.
inline constexpr std::string_view kNotConnected = ": not connected (";
Error not_connected(Errc code, const std::string& where, const std::string& cause);

// How long a connection may stay silent while calls wait on it before it is dropped (see
// Connection::expire_calls), when the call timeout is shorter.
inline constexpr std::chrono::milliseconds kSilenceLimit{1000};

// What the connections of one pool share.
struct PoolContext {
  // Normalises `options` (at least one connection, timeouts of at least 1 ms) and builds the TLS
  // context when options.tls is set.
  explicit PoolContext(ClientOptions options);

  // When the pool's next connection attempt may start: a GCRA over the attempts, at most
  // max_connects_per_second of them per second with a burst of as many.
  Client::Deadline next_connect_slot();

  const ClientOptions options;
  const std::string where;  // "redis host:port", prefix of every error message
  // rediss://: the TLS context, or why it could not be built (every attempt then fails with it).
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  std::string tls_context_error;
  boost::asio::io_context io{1};
  std::atomic<int> up_count{0};  // connections up; any thread may read it
  bool stopping = false;         // set once, when the client shuts down
  std::minstd_rand jitter{std::random_device{}()};

 private:
  Client::Deadline connect_tat_{};
};

// One connection and its reconnection loop.
class Connection {
 public:
  explicit Connection(PoolContext& pool);

  bool up() const { return state_ == State::kUp; }
  // The first attempt after construction queues calls instead of failing them, so that a client
  // used right after it was created does not fail while it is still connecting.
  bool queues_calls() const { return state_ == State::kConnecting && first_attempt_; }
  const std::string& last_cause() const { return last_cause_; }

  // Writes `command` (pipelined behind what is being written), or queues it while the first
  // attempt connects; `done` gets its reply, or kTimeout at `deadline`.
  void send(std::string command, Client::Callback done, Client::Deadline deadline);

  // Starts an attempt now, or when the pool's attempt budget allows (see next_connect_slot).
  void connect();

  // Shutdown (after pool.stopping was set): fails every call and cancels all work.
  void stop();

 private:
  using Socket = boost::asio::generic::stream_protocol::socket;
  using TlsStream = boost::asio::ssl::stream<Socket&>;
  using error_code = boost::system::error_code;

  enum class State { kConnecting, kUp, kDown, kStopped };
  enum class Kind { kUser, kExpired, kPing, kAuth, kSelect };

  // A command whose reply is awaited, in send order.
  struct Pending {
    Kind kind;
    Client::Callback done;  // kUser only
    Client::Deadline deadline;
  };
  // A call queued while the first connection attempt is in progress.
  struct Waiting {
    std::string command;
    Client::Callback done;
    Client::Deadline deadline;
  };
  // One connection attempt: its socket, parser and buffers.
  struct Session {
    explicit Session(boost::asio::io_context& io)
        : socket(io), connect_timer(io), reader(redisReaderCreate()) {}
    Socket socket;
    std::unique_ptr<TlsStream> tls;  // over `socket` (declared after it: destroyed first)
    std::string write_error;  // a write that failed while connecting over TLS (see start_write)
    boost::asio::steady_timer connect_timer;
    ReaderPtr reader;
    std::array<char, 16 * 1024> input{};
    std::string output;     // commands for the next write
    std::string in_flight;  // bytes of the write in progress
    bool writing = false;
    std::deque<Pending> pending;
    int handshake_left = 0;    // PING / AUTH / SELECT replies still expected
    bool got_a_reply = false;  // for a clearer error when the server hangs up at once
    // When the server was last heard from: its last bytes, or the moment a call was sent while
    // no reply was awaited, whichever is later (see expire_calls: silence means a dead path).
    Client::Deadline last_heard{};

    // Appends a call whose reply is awaited.
    void await(Pending entry) {
      if (pending.empty()) last_heard = socket_now();
      pending.push_back(std::move(entry));
    }

    template <typename Handler>
    void read_some(Handler&& handler);
    template <typename Handler>
    void write_all(Handler&& handler);
  };

  void attempt();
  void on_connect(const std::shared_ptr<Session>& session, const error_code& ec);
  void start_session(const std::shared_ptr<Session>& session);
  bool queue_handshake(const std::shared_ptr<Session>& session,
                       const std::vector<std::string>& args, Kind kind);
  void on_up(const std::shared_ptr<Session>& session);
  void start_write(const std::shared_ptr<Session>& session);
  void start_read(const std::shared_ptr<Session>& session);
  std::string lost_connection(const Session& session, const error_code& ec) const;
  void on_reply(const std::shared_ptr<Session>& session, Reply reply);
  // One timer per connection, set for the earliest deadline of the calls it holds.
  void arm_call_timer(Client::Deadline deadline);
  // Fails the calls past their deadline. A connection on which calls waited kSilenceLimit (or the
  // timeout, if longer) without a byte from the server is dropped and replaced: the server or
  // the path to it hangs (a half-open connection, a partition, a stopped server), and a
  // connection that TCP keeps would otherwise time out every call for as long as the kernel
  // keeps it (minutes). A server that is only slow (a fork, a long script, a WAIT) answers well
  // within that.
  void expire_calls();
  // Drops the current session (if any), fails every call it holds and schedules a reconnect.
  void fail(Errc code, const std::string& cause);

  PoolContext& pool_;
  const ClientOptions& options_;
  State state_ = State::kDown;
  bool first_attempt_ = true;
  std::shared_ptr<Session> session_;
  std::deque<Waiting> waiting_;
  boost::asio::steady_timer call_timer_;
  bool call_timer_armed_ = false;
  Client::Deadline call_timer_at_{};
  std::uint64_t call_timer_generation_ = 0;
  boost::asio::steady_timer backoff_timer_;
  boost::asio::ip::tcp::resolver resolver_;
  std::chrono::milliseconds backoff_;
  std::string last_cause_ = "not connected yet";
};

}  // namespace spillway::redis
