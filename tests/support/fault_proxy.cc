#include "tests/support/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <vector>

namespace spillway::testing {
namespace {

using Clock = std::chrono::steady_clock;

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Closes `fd` with an RST instead of a FIN (SO_LINGER 0).
void close_with_reset(int fd) {
  if (fd < 0) return;
  const linger abort{.l_onoff = 1, .l_linger = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

// Bytes on their way one direction, each chunk due at a time (latency, bandwidth).
struct Way {
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
    bool arms = false;  // holds cut_reply_to_next's needle: arms the pair once written
  };
  std::deque<Chunk> chunks;
  Clock::time_point last_due{};  // the bandwidth cap's queue end
};

// One proxied connection: the client's socket and the server's.
struct Pair {
  int client = -1;
  int server = -1;     // -1 while half-open
  bool armed = false;  // the next bytes from the server cut the pair
  Way to_server, to_client;
};

}  // namespace

FaultProxy::FaultProxy() {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &size) != 0 ||
      ::pipe(wake_) != 0) {
    throw std::runtime_error("FaultProxy: cannot listen on a loopback port");
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  send_command(Command::kStop);
  thread_.join();
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void FaultProxy::send_command(Command command) {
  const char byte = static_cast<char>(command);
  (void)!::write(wake_[1], &byte, 1);
}

void FaultProxy::reset_all() { run_command(Command::kReset); }

void FaultProxy::half_open_all() { run_command(Command::kHalfOpen); }

void FaultProxy::run_command(Command command) {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = ++commands_sent_;
  send_command(command);
  done_.wait(lock, [&] { return commands_done_ >= target; });
}

void FaultProxy::cut_reply_to_next(const std::string& needle) {
  std::lock_guard lock(mutex_);
  needle_ = needle;
}

void FaultProxy::run() {
  std::vector<Pair> pairs;
  char buffer[65536];
  const auto close_pair = [](Pair& pair) {
    ::close(pair.client);
    if (pair.server >= 0) ::close(pair.server);
    pair.client = pair.server = -1;
  };
  // When bytes read now may leave: after the latency, and behind the bandwidth cap's queue.
  const auto due_of = [this](Way& way, std::size_t size) {
    Clock::time_point due = Clock::now() + std::chrono::milliseconds(latency_ms_.load());
    if (const std::int64_t cap = bandwidth_.load(); cap > 0) {
      due = std::max(due, way.last_due) +
            std::chrono::microseconds(static_cast<std::int64_t>(size) * 1'000'000 / cap);
      way.last_due = due;
    }
    return due;
  };
  bool stopping = false;
  while (!stopping) {
    // Sleep until the next chunk is due (or something arrives).
    int timeout_ms = -1;
    const Clock::time_point now = Clock::now();
    for (const Pair& pair : pairs) {
      for (const Way* way : {&pair.to_server, &pair.to_client}) {
        if (way->chunks.empty()) continue;
        const auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(way->chunks.front().due - now);
        const int ms = static_cast<int>(std::max<std::int64_t>(0, wait.count()));
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      }
    }
    // In a partition nothing is read (the bytes wait in the kernel's buffers), nothing is
    // flushed, and only a peer's hang-up is watched.
    const bool holding = black_hole_.load();
    if (holding) timeout_ms = 50;  // nothing is due meanwhile; wake to see the partition end
    const short watch = holding ? POLLRDHUP : POLLIN;
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (const Pair& pair : pairs) {
      fds.push_back({pair.client, watch, 0});
      fds.push_back({pair.server, static_cast<short>(pair.server >= 0 ? watch : 0), 0});
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) continue;
    if (fds[0].revents != 0) {
      char byte = 0;
      if (::read(wake_[0], &byte, 1) == 1) {
        const Command command = static_cast<Command>(byte);
        if (command == Command::kStop) {
          stopping = true;
          break;
        }
        for (Pair& pair : pairs) {
          if (pair.client < 0) continue;
          if (command == Command::kReset) {
            close_with_reset(pair.client);
            close_with_reset(pair.server);
            pair.client = pair.server = -1;
          } else if (command == Command::kHalfOpen && pair.server >= 0) {
            close_with_reset(pair.server);
            pair.server = -1;
            pair.to_server.chunks.clear();
            pair.to_client.chunks.clear();
          }
        }
        {
          std::lock_guard lock(mutex_);
          ++commands_done_;
        }
        done_.notify_all();
        // The descriptors polled above may be closed now: poll again.
        std::erase_if(pairs, [](const Pair& pair) { return pair.client < 0; });
        continue;
      }
    }
    if (fds[1].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      const int server = client >= 0 && !refusing_ ? connect_to(target_port_) : -1;
      if (server >= 0) {
        pairs.push_back({.client = client, .server = server});
      } else if (client >= 0) {
        ::close(client);
      }
    }
    for (std::size_t i = 0; i < pairs.size() && 2 + 2 * i < fds.size(); ++i) {
      Pair& pair = pairs[i];
      for (const bool from_client : {true, false}) {
        const pollfd& fd = fds[2 + 2 * i + (from_client ? 0 : 1)];
        if (pair.client < 0 || fd.fd < 0 || fd.revents == 0) continue;
        if (!from_client && pair.server < 0) continue;
        if (holding) {  // a hang-up during the partition
          close_pair(pair);
          continue;
        }
        const ssize_t n = ::recv(fd.fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          close_pair(pair);
          continue;
        }
        if (pair.server < 0) continue;  // half-open: what the client sends is never answered
        bool arms = false;
        if (from_client) {
          std::lock_guard lock(mutex_);
          if (!needle_.empty() &&
              std::string_view(buffer, static_cast<std::size_t>(n)).find(needle_) !=
                  std::string_view::npos) {
            arms = true;
            needle_.clear();
          }
        } else if (pair.armed) {
          ++cuts_;           // before the client can see the connection close
          close_pair(pair);  // the server ran the command; its answer is lost
          continue;
        }
        Way& way = from_client ? pair.to_server : pair.to_client;
        const std::size_t size = static_cast<std::size_t>(n);
        way.chunks.push_back({due_of(way, size), std::string(buffer, size), arms});
      }
    }
    // Forward what is due (a partition holds it).
    const Clock::time_point flush_at = Clock::now();
    for (Pair& pair : pairs) {
      for (const bool to_server : {true, false}) {
        Way& way = to_server ? pair.to_server : pair.to_client;
        while (!holding && pair.client >= 0 && pair.server >= 0 && !way.chunks.empty() &&
               way.chunks.front().due <= flush_at) {
          const Way::Chunk& chunk = way.chunks.front();
          if (!write_all(to_server ? pair.server : pair.client, chunk.bytes.data(),
                         chunk.bytes.size())) {
            close_pair(pair);
            break;
          }
          pair.armed = pair.armed || chunk.arms;  // the server has the command now
          way.chunks.pop_front();
        }
      }
    }
    std::erase_if(pairs, [](const Pair& pair) { return pair.client < 0; });
  }
  for (Pair& pair : pairs) close_pair(pair);
}

}  // namespace spillway::testing
