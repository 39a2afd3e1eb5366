// A TCP proxy on 127.0.0.1 for fault injection on top of a real server: it forwards bytes both
// ways between each accepted connection and a target port, and can be told to cut a connection
// at the moment the server answers a command, after the server ran it and before the client
// reads the answer (a reply lost in the network, as when a node dies mid-call).
//
// Thread safety: the methods may be called from any thread; forwarding runs on one thread of its
// own, stopped by the destructor. The listening port is bound by the constructor, so a server
// can be told to announce it before the target is known (forward_to()).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace spillway::testing {

class FaultProxy {
 public:
  FaultProxy();  // throws std::runtime_error if no loopback port can be bound
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const { return port_; }
  // Where accepted connections are forwarded (127.0.0.1:target_port); set before the first one.
  void forward_to(std::uint16_t target_port) { target_port_ = target_port; }

  // The next client-to-server bytes that contain `needle` arm their connection; the next
  // server-to-client bytes on it are dropped and both sides of it are closed. Once per call.
  void cut_reply_to_next(const std::string& needle);
  // How many connections were cut so far.
  int cuts() const { return cuts_; }

 private:
  void run();

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor writes to stop run()
  std::uint16_t port_ = 0;
  std::atomic<std::uint16_t> target_port_{0};
  mutable std::mutex mutex_;
  std::string needle_;  // empty: no cut armed
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

}  // namespace spillway::testing
