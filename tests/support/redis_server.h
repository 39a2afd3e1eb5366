// Starts a real redis-server for a test on a free loopback port (and a unix socket), and stops
// it when destroyed. If redis-server cannot start, construction fails the test: nothing is
// silently skipped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace spillway::testing {

class RedisServer {
 public:
  // extra_config: more redis.conf lines (e.g. "requirepass secret"). port 0: a free one.
  explicit RedisServer(const std::string& extra_config = "", std::uint16_t port = 0);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& unix_socket() const { return socket_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Kills the server (SIGKILL) and starts it again on the same port and socket (data is lost).
  void restart();
  void stop();   // SIGKILL; the port stays reserved for start()
  void start();  // starts it again after stop()

  // Runs `redis-cli -p PORT args...` and returns its stdout (for checks such as TTL and SCAN).
  std::string cli(const std::string& args) const;

  bool running() const { return pid_ > 0; }

  // SIGSTOP / SIGCONT: the server keeps its connections but answers nothing meanwhile.
  void pause();
  void resume();

 private:
  std::string dir_;
  std::string socket_;
  std::string extra_config_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace spillway::testing
