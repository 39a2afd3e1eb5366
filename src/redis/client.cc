// Client: the pool (one I/O thread, a set of Connections, calls spread round-robin over them)
// and the public functions. See client.h for the contract; one connection and its reconnection
// loop are in connection.cc, RESP encoding and decoding in resp.cc.
//
// Everything below the public functions runs on the I/O thread, except format_command() (called
// by the caller) and the atomic up_count read by connected().
#include "src/redis/client.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <future>
#include <thread>
#include <utility>

#include "src/redis/connection.h"
#include "src/redis/resp.h"

namespace spillway::redis {

namespace asio = boost::asio;

// ---- Impl: the pool ------------------------------------------------------------------------

class Client::Impl {
 public:
  explicit Impl(ClientOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // mode: see Client::CallMode.
  void submit(Result<std::string> command, Callback done, SocketClock::time_point deadline,
              CallMode mode = {}) {
    asio::post(pool_.io,
               [this, command = std::move(command), done = std::move(done), deadline,
                mode]() mutable { dispatch(std::move(command), std::move(done), deadline, mode); });
  }

  // Idempotent; must not run on the I/O thread.
  void shutdown();

  bool connected() const { return pool_.up_count.load(std::memory_order_acquire) > 0; }
  bool on_io_thread() { return pool_.io.get_executor().running_in_this_thread(); }

 private:
  void dispatch(Result<std::string> command, Callback done, SocketClock::time_point deadline,
                CallMode mode);
  // Sends `command` and then WAIT on `target` (CallMode::durable); `done` gets the command's
  // reply once options.replica_acks replicas acknowledged it, else an error.
  void send_durable(Connection& target, std::string command, Callback done,
                    SocketClock::time_point deadline);

  PoolContext pool_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::size_t next_ = 0;  // I/O thread only
  std::thread thread_;    // last: started when everything else exists
};

Client::Impl::Impl(ClientOptions options)
    : pool_(std::move(options)), work_(asio::make_work_guard(pool_.io)) {
  connections_.reserve(static_cast<std::size_t>(pool_.options.pool_size));
  for (int i = 0; i < pool_.options.pool_size; ++i) {
    connections_.push_back(std::make_unique<Connection>(pool_));
  }
  for (auto& connection : connections_) {
    asio::post(pool_.io, [target = connection.get()] { target->connect(); });
  }
  thread_ = std::thread([this] { pool_.io.run(); });
}

Client::Impl::~Impl() { shutdown(); }

void Client::Impl::shutdown() {
  if (!thread_.joinable()) return;
  asio::post(pool_.io, [this] {
    pool_.stopping = true;
    for (auto& connection : connections_) connection->stop();
  });
  work_.reset();  // run() returns once the aborted operations have completed
  thread_.join();
}

void Client::Impl::dispatch(Result<std::string> command, Callback done,
                            SocketClock::time_point deadline, CallMode mode) {
  if (!command) {
    complete(done, std::unexpected(command.error()));
    return;
  }
  if (pool_.stopping) {
    complete(done, std::unexpected(
                       Error{Errc::kUnavailable, pool_.where + ": the client is shutting down"}));
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
    complete(done, std::unexpected(not_connected(Errc::kUnavailable, pool_.where,
                                                 connections_[first]->last_cause())));
    return;
  }
  const SocketClock::time_point now = socket_now();
  deadline = std::min(deadline, now + pool_.options.timeout);
  if (deadline <= now) {
    complete(done,
             std::unexpected(Error{
                 Errc::kTimeout, pool_.where + ": the call's time was spent before it was sent"}));
    return;
  }
  if (mode.asking) {
    // A call of its own (so that the timeout scan treats it like any other), whose reply is
    // dropped; nothing can come between it and the command on this thread.
    static const std::string kAsking = *format_command({"ASKING"});
    target->send(
        kAsking, [](Result<Reply>) {}, deadline);
  }
  if (mode.durable && pool_.options.replica_acks > 0) {
    send_durable(*target, std::move(*command), std::move(done), deadline);
  } else {
    target->send(std::move(*command), std::move(done), deadline);
  }
}

void Client::Impl::send_durable(Connection& target, std::string command, Callback done,
                                SocketClock::time_point deadline) {
  // WAIT's own timeout ends a tenth (at least 5 ms) before the call's deadline, so that Redis'
  // answer (how many replicas acknowledged) arrives before the deadline fails the call without
  // it. WAIT 0 would wait forever: at least 1 ms.
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const long long left = duration_cast<milliseconds>(deadline - socket_now()).count();
  const long long wait_ms = std::max<long long>(1, left - std::max<long long>(5, left / 10));
  const int wanted = pool_.options.replica_acks;
  Result<std::string> wait =
      format_command({"WAIT", std::to_string(wanted), std::to_string(wait_ms)});
  // `where` is the pool's (it outlives every call: calls end before the pool is destroyed).
  // Replies come in the order sent: the command's first, kept here until WAIT's. A command that
  // failed or that Redis refused (NOSCRIPT: the caller sends it again at once, as EVAL) is
  // answered at once; WAIT's reply is then dropped. (That WAIT still holds this connection until
  // a replica acknowledges or it times out: the resend goes to the pool's next connection.)
  struct Durable {
    Callback done;
    std::optional<Reply> reply;
  };
  auto call = std::make_shared<Durable>(Durable{.done = std::move(done)});
  target.send(
      std::move(command),
      [call](Result<Reply> reply) {
        if (!reply || reply->is_error()) return complete(call->done, std::move(reply));
        call->reply = std::move(*reply);
      },
      deadline);
  target.send(
      std::move(*wait),
      [call, wanted, wait_ms, &where = pool_.where](Result<Reply> acks) {
        if (!call->reply) return;  // answered already
        if (acks && acks->type == Reply::Type::kInteger && acks->integer >= wanted) {
          return complete(call->done, std::move(*call->reply));
        }
        // Too few acknowledgements, or no count: kUnavailable either way, with words of its own:
        // the server answered (or the connection broke), so "no reply" would send an operator
        // looking for the wrong fault.
        const std::string wanted_text =
            std::to_string(wanted) + (wanted == 1 ? " replica" : " replicas");
        std::string what;
        if (acks && acks->type == Reply::Type::kInteger) {
          what = "was acknowledged by " + std::to_string(acks->integer) + " of " + wanted_text +
                 " within " + std::to_string(wait_ms) + " ms";
        } else if (acks) {  // a Redis error reply to WAIT
          what = "its WAIT for " + wanted_text + " was refused (" + acks->text + ")";
        } else if (acks.error().code == Errc::kTimeout) {
          what = "no replica acknowledged it before the deadline (WAIT for " + wanted_text + ", " +
                 std::to_string(wait_ms) + " ms, had not answered)";
        } else {
          what = "its WAIT for " + wanted_text + " failed (" + acks.error().message + ")";
        }
        complete(call->done,
                 std::unexpected(
                     Error{Errc::kUnavailable, where + ": the write ran on the primary but " +
                                                   what + " (backend.durability: replicated)"}));
      },
      deadline);
}

// ---- Client --------------------------------------------------------------------------------

Client::Client(ClientOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}

Client::~Client() { impl_->shutdown(); }

Result<Reply> Client::call(const std::vector<std::string>& args) {
  if (impl_->on_io_thread()) {
    return std::unexpected(
        Error{Errc::kInternal,
              "redis Client::call() on the client's I/O thread would deadlock; use call_async"});
  }
  auto promise = std::make_shared<std::promise<Result<Reply>>>();
  std::future<Result<Reply>> future = promise->get_future();
  call_async(args, [promise](Result<Reply> result) { promise->set_value(std::move(result)); });
  return future.get();
}

void Client::call_async(const std::vector<std::string>& args, Callback done) {
  impl_->submit(format_command(args), std::move(done), SocketClock::time_point::max());
}

void Client::call_async(const std::vector<std::string>& args, Deadline deadline, Callback done) {
  impl_->submit(format_command(args), std::move(done), deadline);
}

void Client::call_async(const std::vector<std::string>& args, Deadline deadline, CallMode mode,
                        Callback done) {
  impl_->submit(format_command(args), std::move(done), deadline, mode);
}

bool Client::connected() const { return impl_->connected(); }

bool never_sent(const Error& error) {
  return is_backend_failure(error) && error.message.find(kNotConnected) != std::string::npos;
}

}  // namespace spillway::redis
