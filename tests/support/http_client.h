// A minimal blocking HTTP/1.1 client for tests: one request per call on a fresh connection, or
// several on one kept-alive connection. Raw sockets, so tests control every byte.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/poll.h"

namespace spillway::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpConnection {
 public:
  // `source`: the local IPv4 address to connect from (e.g. "127.0.0.2"); null: the kernel's choice.
  explicit HttpConnection(std::uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      if (::inet_pton(AF_INET, source, &local.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
        ::close(fd_);
        throw std::runtime_error(std::string("cannot bind a client socket to ") + source);
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
    }
  }
  ~HttpConnection() { ::close(fd_); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }

  void send_raw(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      sent += static_cast<std::size_t>(n);
    }
  }

  HttpReply request(const std::string& method, const std::string& target,
                    const std::string& body = "",
                    const std::map<std::string, std::string>& headers = {}) {
    std::string out = method + " " + target + " HTTP/1.1\r\nHost: test\r\n";
    for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
    if (!body.empty() || method == "POST")
      out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    out += "\r\n" + body;
    send_raw(out);
    return read_reply(method == "HEAD");
  }

  // Reads one response (Content-Length framed; no body after HEAD). Status 0 if the server
  // closed first.
  HttpReply read_reply(bool head_only = false) {
    HttpReply reply;
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return reply;
    }
    const std::string head = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    reply.status = std::stoi(head.substr(9, 3));
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const std::size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next - pos - 2);
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      reply.headers[name] = value;
      pos = next;
    }
    const std::size_t length = head_only ? 0
                                         : std::stoul(reply.header("content-length").empty()
                                                          ? "0"
                                                          : reply.header("content-length"));
    while (buffer_.size() < length) {
      if (!fill()) break;
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, std::min(length, buffer_.size()));
    return reply;
  }

 private:
  bool fill() {
    char chunk[8192];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

// Whether something accepts connections on 127.0.0.1:`port` within 5 s (wait_until's polls).
inline bool accepts_connections(std::uint16_t port) {
  return wait_until([port] {
    try {
      HttpConnection probe(port);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  });
}

inline HttpReply http(std::uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = "",
                      const std::map<std::string, std::string>& headers = {}) {
  HttpConnection connection(port);
  return connection.request(method, target, body, headers);
}

}  // namespace spillway::testing
