// A TCP proxy on 127.0.0.1 for fault injection on top of a real server: it forwards bytes both
// ways between each accepted connection and a target port, and can be told, per proxy, to:
//   - add latency to every byte, each way (set_latency), and cap each way's bandwidth
//     (set_bandwidth): the bytes wait in the proxy, in order;
//   - black-hole (set_black_hole(true)): connections stay open and new ones are accepted, but
//     nothing is forwarded either way: a partition, as a dead router or a firewall's DROP rule
//     makes one (the sender sees no reset, only silence). The bytes wait, in the kernel's buffers
//     and the proxy's queues, as TCP's retransmissions hold them through a partition, and flow
//     in order once it heals (TCP never loses bytes from the middle of a stream);
//   - refuse (set_refusing(true)): every new connection is closed as soon as it is accepted;
//   - reset every open connection (reset_all: RST to both sides, as a restarted NAT or a
//     killed peer gives), or leave them half-open (half_open_all: the server's side is closed,
//     the client's is kept and never answered, as after a peer's host died without a FIN);
//   - cut the connection at the moment the server answers a command (cut_reply_to_next), after
//     the server ran it and before the client reads the answer (a reply lost in the network, as
//     when a node dies mid-call).
// One proxy per spillway instance partitions that instance from Redis while others still reach it.
// Settings take effect from the proxy's next read; bytes already queued keep their due times.
// Less adversarial than a real network in two ways: during a black hole new connections are
// still accepted and a peer's hang-up still reaches the other side, and writes block the proxy's
// one thread (the tests move little data).
//
// Units: milliseconds and bytes per second. Thread safety: the methods may be called from any
// thread; forwarding runs on one thread of its own, stopped by the destructor. The listening port
// is bound by the constructor, so a server can be told to announce it before the target is known
// (forward_to()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
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

  // Delay added to every chunk of bytes, each way (0: none). Applies to bytes read from now on.
  void set_latency(std::chrono::milliseconds latency) { latency_ms_ = latency.count(); }
  // Bytes per second each way, per connection (0: no cap).
  void set_bandwidth(std::int64_t bytes_per_second) { bandwidth_ = bytes_per_second; }
  // A partition while on (see above); off again forwards what arrives from then on.
  void set_black_hole(bool on) { black_hole_ = on; }
  // New connections are closed at once while on.
  void set_refusing(bool on) { refusing_ = on; }
  // Every connection open now is reset (both sides get RST). Returns once done.
  void reset_all();
  // Every connection open now loses its server side; its client side stays open and silent.
  // Returns once done.
  void half_open_all();

  // The next client-to-server bytes that contain `needle` arm their connection; the next
  // server-to-client bytes on it are dropped and both sides of it are closed. Once per call.
  void cut_reply_to_next(const std::string& needle);
  // How many connections were cut so far.
  int cuts() const { return cuts_; }

 private:
  enum class Command : char { kStop = 's', kReset = 'r', kHalfOpen = 'h' };
  void send_command(Command command);
  // Sends `command` to run() and waits until it was carried out.
  void run_command(Command command);
  void run();

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: commands to run()
  std::uint16_t port_ = 0;
  std::atomic<std::uint16_t> target_port_{0};
  std::atomic<std::int64_t> latency_ms_{0};
  std::atomic<std::int64_t> bandwidth_{0};
  std::atomic<bool> black_hole_{false};
  std::atomic<bool> refusing_{false};
  mutable std::mutex mutex_;  // needle_, and the done flags below
  std::string needle_;        // empty: no cut armed
  std::condition_variable done_;
  std::uint64_t commands_sent_ = 0;  // reset_all / half_open_all asked (in order, under mutex_)
  std::uint64_t commands_done_ = 0;  // and carried out by run()
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

}  // namespace spillway::testing
