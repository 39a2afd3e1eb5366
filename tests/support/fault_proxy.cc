#include "tests/support/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

namespace spillway::testing {
namespace {

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

// One proxied connection: the client's socket and the server's.
struct Pair {
  int client = -1;
  int server = -1;
  bool armed = false;  // the next bytes from the server cut the pair
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
  const char stop = 's';
  (void)!::write(wake_[1], &stop, 1);
  thread_.join();
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
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
    ::close(pair.server);
    pair.client = pair.server = -1;
  };
  while (true) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (const Pair& pair : pairs) {
      fds.push_back({pair.client, POLLIN, 0});
      fds.push_back({pair.server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      const int server = client >= 0 ? connect_to(target_port_) : -1;
      if (server >= 0) {
        pairs.push_back({client, server});
      } else if (client >= 0) {
        ::close(client);
      }
    }
    for (std::size_t i = 0; i < pairs.size() && 2 + 2 * i < fds.size(); ++i) {
      Pair& pair = pairs[i];
      for (const bool from_client : {true, false}) {
        const pollfd& fd = fds[2 + 2 * i + (from_client ? 0 : 1)];
        if (pair.client < 0 || fd.revents == 0) continue;
        const ssize_t n = ::recv(fd.fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          close_pair(pair);
          continue;
        }
        if (from_client) {
          std::lock_guard lock(mutex_);
          if (!needle_.empty() &&
              std::string_view(buffer, static_cast<std::size_t>(n)).find(needle_) !=
                  std::string_view::npos) {
            pair.armed = true;
            needle_.clear();
          }
        } else if (pair.armed) {
          ++cuts_;           // before the client can see the connection close
          close_pair(pair);  // the server ran the command; its answer is lost
          continue;
        }
        if (!write_all(from_client ? pair.server : pair.client, buffer,
                       static_cast<std::size_t>(n))) {
          close_pair(pair);
        }
      }
    }
    std::erase_if(pairs, [](const Pair& pair) { return pair.client < 0; });
  }
  for (Pair& pair : pairs) close_pair(pair);
}

}  // namespace spillway::testing
