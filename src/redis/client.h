// An asynchronous, multiplexed Redis client on Boost.Asio, speaking RESP: replies through hiredis
// 0.14's reader, commands written by format_command (bulk strings, one allocation).
//
// Threading and ownership: a Client owns one I/O thread and `pool_size` connections. call() and
// call_async() may be used from any thread. Commands from all callers that reach a connection
// while its previous write is in flight are sent together in the next write (automatic
// pipelining, no added delay). Replies are matched to callers in FIFO order per connection.
//
// TLS (options.tls set): each connection does the TLS handshake (verifying the server unless
// told not to) and a PING before it takes calls, so a refused client certificate is seen at
// connect time; everything above the socket (pipelining, batching) is the same.
//
// Faults: every call has a deadline (options.timeout after the call, or an earlier one the caller
// gives: time it already spent waiting counts). A lost connection fails its pending calls
// with Errc::kUnavailable and reconnects in the background with jittered exponential backoff
// (a random wait in [b/2, b], b doubling from options.reconnect_min to reconnect_max), and the
// pool makes at most options.max_connects_per_second attempts. A connection on which calls
// waited a second (or the timeout, if longer) without a byte from the server is dropped the same
// way (a half-open connection, a partition). Calls made while disconnected fail
// at once with
// kUnavailable. Once the server is back, calls succeed again without restarting the process.
// Redis error replies are returned as a Reply of Type::kError (not as an Error): the caller
// decides (for example, NOSCRIPT).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/redis/reply.h"
#include "src/redis/tls.h"

namespace spillway::redis {

// The Redis client's one clock: Asio's steady clock, the one its socket timers run on. Every
// deadline, resend pause and refresh timer in src/redis reads it through socket_now(). It is not
// the Runtime's (spillway/runtime.h): the timers these times are compared with are Asio's, on the
// client's event loop, and a ManualRuntime cannot move them.
using SocketClock = std::chrono::steady_clock;
inline SocketClock::time_point socket_now() { return SocketClock::now(); }
inline SocketClock::time_point deadline_in(std::chrono::milliseconds timeout) {
  return socket_now() + timeout;
}

struct ClientOptions {
  // Where to connect: host + port, or a unix socket path (then host/port are ignored).
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string unix_socket;
  std::optional<std::string> user;      // AUTH user password (Redis 6 ACL) when set with password
  std::optional<std::string> password;  // AUTH password
  int db = 0;                           // SELECT db when not 0
  int pool_size = 1;                    // connections; calls are spread round-robin
  std::chrono::milliseconds timeout{1000};  // per call
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds reconnect_min{10};
  std::chrono::milliseconds reconnect_max{1000};
  // Connection attempts of the whole pool, per second (a burst of as many is allowed): a server
  // that drops every connection must not get a storm of reconnects from every client.
  int max_connects_per_second = 20;
  std::optional<TlsOptions> tls;  // rediss://: TLS on every connection
  // Replicas that must hold a durable call's writes before it is answered (backend.durability:
  // replicated is 1). 0: calls are answered as the primary replies (Redis' asynchronous
  // replication; a write not yet sent to a replica is lost if the primary dies).
  int replica_acks = 0;
  // Replies that no call waits for: the messages of a subscription (after a SUBSCRIBE call),
  // on the I/O thread; must not block. Without it such a reply is a protocol error that drops
  // the connection. A subscription does not outlive its connection: after a reconnect, nothing
  // is subscribed (connected() going false is the sign to subscribe again).
  std::function<void(Reply)> on_push;
};

class Client {
 public:
  using Callback = std::function<void(Result<Reply>)>;
  using Deadline = SocketClock::time_point;

  // Starts the I/O thread and connects the pool in the background; never blocks on the network.
  explicit Client(ClientOptions options);
  // Fails pending calls with kUnavailable, closes the connections and joins the I/O thread.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends one command (each argument is one bulk string) and waits for its reply or the timeout.
  Result<Reply> call(const std::vector<std::string>& args);

  // The same without blocking: `done` runs exactly once, on the I/O thread, with the reply or an
  // error (kTimeout, kUnavailable). `done` must not block.
  void call_async(const std::vector<std::string>& args, Callback done);
  // The same with a deadline of the caller's (the earlier of it and options.timeout from now);
  // a deadline already past fails at once with kTimeout.
  void call_async(const std::vector<std::string>& args, Deadline deadline, Callback done);

  // How a script call is sent (call_async with a CallMode):
  //  asking   Redis Cluster's ASK redirection: ASKING goes first, on the same connection, back to
  //           back, so that the node serves the command for a slot it is importing (ASKING's
  //           reply is dropped);
  //  durable  with options.replica_acks > 0: `WAIT replica_acks <ms>` (the time left to the
  //           deadline, less a tenth of it and at least 5 ms, so that its count comes in time) goes
  //           right after the command on the same connection, so it covers the command's writes
  //           (and every earlier write of that connection). `done` gets the command's reply once
  //           that many replicas hold it; fewer in time is Errc::kUnavailable ("... acknowledged
  //           by 0 of 1 replica ..."), an answer after which the command has run on the primary.
  //           A command that failed, or that Redis answered with an error, is answered as it is.
  //           WAIT holds its connection: calls pipelined behind it wait with it.
  struct CallMode {
    bool asking = false;
    bool durable = false;
  };
  void call_async(const std::vector<std::string>& args, Deadline deadline, CallMode mode,
                  Callback done);

  // True when at least one connection is up (for readiness checks).
  bool connected() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

// True when a call failed before it was written to any connection (none was up), so that sending
// it again elsewhere cannot apply it twice.
bool never_sent(const Error& error);

}  // namespace spillway::redis
