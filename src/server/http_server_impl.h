// The Server behind HttpServer (its Impl): the workers, the acceptor, the books of open
// connections, and stop with its drain. Declared here for the connections (connection.h), which
// call back into it; defined in http_server.cc. Internal to the server library.
//
// Threads: `threads` workers (worker.h), each running its own io_context on one thread. The
// acceptor runs on worker 0 and hands connections to the workers in turn.
//
// Ownership and lifetimes: HttpServer holds the Server (as its Impl) by shared_ptr. The Server
// owns the workers; the accept loop and the timers capture a raw Server*, valid because the
// threads are joined (stop) before the Server goes away, and handlers still queued then are
// destroyed with the io_contexts without running. Connections point back to the Server (see
// connection.h) and Responders hold it by weak_ptr.
//
// Thread safety: the public methods may be called from any thread; stop() from a server thread
// does not wait (the destructor finishes the job).
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "spillway/error.h"
#include "src/server/access_log.h"
#include "src/server/http_server.h"
#include "src/server/worker.h"

namespace spillway::server {

class Connection;

class Server : public std::enable_shared_from_this<Server> {
 public:
  Server(HttpServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Result<void> listen();
  Result<void> run();
  void stop(std::chrono::milliseconds drain);

  std::uint16_t port() const { return port_; }
  std::size_t open_connections() const { return open_.load(std::memory_order_acquire); }

  // For connections.
  const HttpServerOptions& options() const { return options_; }
  const Handler& handler() const { return handler_; }
  bool logging() const { return options_.log_requests; }
  void log(std::string_view line) { log_.write(line); }
  void connection_opened() { open_.fetch_add(1, std::memory_order_acq_rel); }
  void connection_closed() { open_.fetch_sub(1, std::memory_order_acq_rel); }
  void forget(Connection* connection);
  // How often a connection checks its deadline: a few times per timeout, at most once a second.
  std::chrono::milliseconds tick() const {
    using std::chrono::milliseconds;
    const auto shortest = std::min(options_.read_timeout, options_.idle_timeout);
    return std::clamp(shortest / 4, milliseconds(5), milliseconds(1000));
  }

 private:
  void accept();
  void on_accept(const boost::system::error_code& ec, std::thread::id thread, Socket socket);
  bool on_server_thread() const;
  std::shared_ptr<Connection> evict_idle();  // with mutex_ held
  void schedule_log_flush();

  // Declared first so they outlive the io_contexts: connections destroyed with them use them.
  HttpServerOptions options_;
  const Handler handler_;
  AccessLog log_;  // from options_.access_log; flushes what is buffered when it goes
  std::atomic<std::size_t> open_{0};
  std::mutex mutex_;  // guards the fields below, with `changed_`
  std::condition_variable changed_;
  struct Tracked {
    std::weak_ptr<Connection> connection;
    std::string peer;         // its key in per_peer_; "" when not counted there
    bool counted = false;     // an open connection (not one refused over a cap)
    std::uint64_t order = 0;  // accept order
    bool evicted = false;     // closed by evict_idle(), closing
  };
  std::unordered_map<Connection*, Tracked> connections_;
  // Open connections per peer (peer_key()), when options_.max_connections_per_peer is set.
  std::unordered_map<std::string, std::size_t> per_peer_;
  std::uint64_t accepted_ = 0;  // connections accepted so far (Tracked::order)
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
  boost::asio::ip::tcp::endpoint peer_;  // filled by the pending accept
};

}  // namespace spillway::server
