// HttpServer (see http_server.h): the Server behind it (http_server_impl.h), which binds, runs the
// workers, accepts connections and hands them to the workers in turn (connection.h has what
// happens on a connection), and stops with a drain.
#include "src/server/http_server.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <string>
#include <utility>

#include "src/core/text.h"
#include "src/policy/ip.h"
#include "src/server/connection.h"
#include "src/server/http_server_impl.h"
#include "src/server/server_tls.h"

namespace spillway::server {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;

// After the drain deadline: how long stop() waits for force-closed connections and the threads.
constexpr milliseconds kStopGrace{1000};
// Pause before accepting again after an error such as "too many open files".
constexpr milliseconds kAcceptRetry{50};

// "127.0.0.1" for IPv4 and IPv4-mapped IPv6 peers, "::1" for IPv6.
std::string peer_text(const asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  }
  return address.to_string();
}

// What max_connections_per_peer counts by: the peer as a request's `ip` is keyed (an IPv4
// address, IPv4-mapped ones too, or an IPv6 address's /64: one host usually has a whole /64).
std::string peer_key(const std::string& peer) {
  const Result<policy::IpAddress> ip = policy::parse_ip(peer);
  return ip ? policy::ip_key(*ip, 64) : peer;
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

}  // namespace

// ---- Server --------------------------------------------------------------------------------

Server::Server(HttpServerOptions options, Handler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      log_(options_.access_log, options_.log_json) {
  const int threads = std::max(options_.threads, 1);
  for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>());
  acceptor_.emplace(workers_[0]->ioc.get_executor());
  accept_retry_.emplace(workers_[0]->ioc.get_executor());
  log_timer_.emplace(workers_[0]->ioc.get_executor());
}

Server::~Server() {
  stop(milliseconds(0));
  // Handlers still queued hold connections; they go with the io_contexts, while the members
  // connections use (declared before workers_) are still alive. log_ flushes after them.
  acceptor_.reset();
  accept_retry_.reset();
  log_timer_.reset();
  workers_.clear();
}

void Server::schedule_log_flush() {
  log_timer_->expires_after(AccessLog::kFlushInterval);
  log_timer_->async_wait([this](const error_code& ec) {
    log_.flush();
    if (!ec) schedule_log_flush();
  });
}

void Server::forget(Connection* connection) {
  const std::lock_guard lock(mutex_);
  const auto found = connections_.find(connection);
  if (found == connections_.end()) return;
  if (!found->second.peer.empty()) {
    const auto peer = per_peer_.find(found->second.peer);
    if (peer != per_peer_.end() && --peer->second == 0) per_peer_.erase(peer);
  }
  connections_.erase(found);
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
    if (log_.buffered() && options_.log_requests) schedule_log_flush();
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
  const bool full = open_.load(std::memory_order_acquire) >= options_.max_connections;
  const char* refusal = full && !options_.evict_idle_when_full ? "too many connections" : nullptr;
  const std::size_t per_peer = options_.max_connections_per_peer;
  std::string peer = peer_text(peer_.address());
  std::string key = per_peer > 0 && refusal == nullptr ? peer_key(peer) : "";
  std::shared_ptr<Connection> connection;
  std::shared_ptr<Connection> evicted;  // released after the lock (its destructor takes it)
  {
    const std::lock_guard lock(mutex_);
    if (!stopping_) {
      if (!key.empty()) {
        const auto found = per_peer_.find(key);
        if (found != per_peer_.end() && found->second >= per_peer) {
          refusal = "too many connections from this address";
        }
      }
      if (refusal == nullptr && full) {
        evicted = evict_idle();
        if (!evicted) refusal = "too many connections";
      }
      if (refusal != nullptr) key.clear();
      if (!key.empty()) ++per_peer_[key];
      connection = std::make_shared<Connection>(
          *this, std::move(socket), thread, std::move(peer), refusal == nullptr,
          options_.tls && refusal == nullptr ? options_.tls->current() : nullptr);
      connections_.emplace(connection.get(), Tracked{.connection = connection,
                                                     .peer = std::move(key),
                                                     .counted = refusal == nullptr,
                                                     .order = ++accepted_});
    }
  }
  if (evicted) evicted->post_close();
  if (connection) connection->start(refusal);  // else the socket closes as it goes out of scope
  accept();
}

// The counted connection accepted first among those that have not sent a request (nor a header
// check_headers accepted), marked so that it is not chosen twice; null if there is none. Called
// with mutex_ held: an entry of connections_ is alive (its destructor waits for mutex_ to leave the
// books), so its proven() may be read through the raw pointer.
std::shared_ptr<Connection> Server::evict_idle() {
  Tracked* oldest = nullptr;
  for (auto& [raw, tracked] : connections_) {
    if (!tracked.counted || tracked.evicted || raw->proven()) continue;
    if (oldest == nullptr || tracked.order < oldest->order) oldest = &tracked;
  }
  if (oldest == nullptr) return nullptr;
  std::shared_ptr<Connection> victim = oldest->connection.lock();
  if (victim) oldest->evicted = true;
  return victim;
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
    for (const auto& [raw, tracked] : connections_) {
      if (auto connection = tracked.connection.lock()) live.push_back(std::move(connection));
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
    for (const auto& [raw, tracked] : connections_) {
      if (auto connection = tracked.connection.lock()) live.push_back(std::move(connection));
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
  log_.flush();
  stopped_ = true;
}

// ---- HttpServer ----------------------------------------------------------------------------

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::vector<std::string_view> HttpRequest::header_values(std::string_view name) const {
  std::vector<std::string_view> values;
  for (const auto& [key, value] : headers) {
    if (key == name) values.emplace_back(value);
  }
  return values;
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
