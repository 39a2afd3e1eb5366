// Helpers for tests that run programs: free loopback ports, files, shell commands, any program as
// a child process (ChildProcess, tests/support/child_process.h, included here), and a `spillway
// serve` child process; children are stopped with SIGTERM when their object goes away.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/poll.h"
#include "tests/support/test_labels.h"

namespace spillway::testing {

// A TCP socket bound to 127.0.0.1 on a port the kernel picked, which is written to `port`;
// listening when `backlog` > 0. The caller closes it.
inline int loopback_socket(std::uint16_t& port, int backlog = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (backlog > 0) ::listen(fd, backlog);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

// A port on 127.0.0.1 that was free a moment ago.
inline std::uint16_t free_port() {
  std::uint16_t port = 0;
  ::close(loopback_socket(port));
  return port;
}

// A listening socket on 127.0.0.1 (its port written to `port`), for a test's own server.
inline int listen_on_loopback(std::uint16_t& port) { return loopback_socket(port, 128); }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct CommandResult {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out;  // stdout
};

// Runs `command` with /bin/sh, feeding `input` (if any) on stdin, and collects stdout.
inline CommandResult run_command(const std::string& command, const std::string& input = "") {
  std::string full = command;
  std::string input_path;
  if (!input.empty()) {
    static int calls = 0;
    input_path =
        "/tmp/spillway_test_in_" + std::to_string(getpid()) + "_" + std::to_string(calls++);
    std::ofstream(input_path) << input;
    full += " < " + input_path;
  }
  CommandResult result;
  FILE* pipe = popen(full.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    result.out.append(buffer.data(), n);
  }
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (!input_path.empty()) std::remove(input_path.c_str());
  return result;
}

struct BinaryRun {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the spillway binary with `args` (shell words), `input` on stdin, and collects both outputs.
inline BinaryRun run_binary(const std::string& args, const std::string& input = "") {
  require_label("cli", "the spillway binary");
  static int calls = 0;
  const std::string err_path =
      "/tmp/spillway_test_err_" + std::to_string(getpid()) + "_" + std::to_string(calls++);
  const CommandResult result = run_command(
      std::string(SPILLWAY_BINARY) + " " + args + " 2> " + err_path, input.empty() ? "\n" : input);
  BinaryRun run{.status = result.status, .out = result.out, .err = read_file(err_path)};
  std::remove(err_path.c_str());
  return run;
}

// `spillway serve ARGS --listen 127.0.0.1:0` as a child process (a ChildProcess,
// tests/support/child_process.h); stderr to `log`. The kernel picks the port (no other process
// can take it between a pick and the bind); ready() reads it from the server's "listening on"
// line. Destroyed: SIGTERM, SIGKILL after 10 s.
class ServeProcess {
 public:
  // The log is started afresh: ready() must not read a previous run's "listening".
  ServeProcess(const std::vector<std::string>& args, std::string log)
      : log_(std::move(log)),
        child_(serve_argv(args), log_, {.program = SPILLWAY_BINARY, .check_label = false}) {}
  // The same, started through `wrapper` (its argv; wrapper[0] a full path), e.g. /usr/bin/env
  // with variables: the wrapper's words, then the spillway binary's path and `serve ARGS`.
  ServeProcess(const std::vector<std::string>& args, std::string log,
               const std::vector<std::string>& wrapper)
      : log_(std::move(log)),
        child_(wrapped(wrapper, serve_argv(args)), log_,
               {.program = wrapper.at(0), .check_label = false}) {}
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // True once the server logged that it is listening; port() is its port from then on. Waits up
  // to 30 s: a sanitized server on a loaded machine can take seconds to start (a passing run
  // returns as soon as the line is there).
  bool ready() const {
    port_ = port_after("spillway serve: listening on 127.0.0.1:");
    return port_ != 0;
  }
  // The admin listener's port, from serve's "admin API listening on" line (written just after
  // "listening"), waited for as ready() waits; 0 if the line never came.
  std::uint16_t admin_port() const {
    return port_after("spillway serve: admin API listening on 127.0.0.1:");
  }
  // Sends `signal` and waits, up to 30 s before SIGKILL (a server that ignores the signal fails
  // its test instead of hanging it); returns the exit status (-1 if it did not exit normally).
  int stop(int signal) {
    const int status = child_.stop(signal, std::chrono::seconds(30));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid() const { return child_.pid(); }
  std::uint16_t port() const { return port_; }  // 0 until ready()
  std::string log() const { return read_file(log_); }

 private:
  // `spillway serve ARGS --listen 127.0.0.1:0`, once the test's labels were checked for it.
  static std::vector<std::string> serve_argv(const std::vector<std::string>& args) {
    require_label("cli", "spillway serve");
    std::vector<std::string> all = {"spillway", "serve"};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back("--listen");
    all.push_back("127.0.0.1:0");
    return all;
  }
  static std::vector<std::string> wrapped(const std::vector<std::string>& wrapper,
                                          std::vector<std::string> argv) {
    argv.at(0) = SPILLWAY_BINARY;
    argv.insert(argv.begin(), wrapper.begin(), wrapper.end());
    return argv;
  }
  // The port that follows `line` in the log, once it is there (up to 30 s); else 0.
  std::uint16_t port_after(std::string_view line) const {
    std::uint16_t port = 0;
    wait_until(
        [&] {
          const std::string text = read_file(log_);
          const std::size_t at = text.find(line);
          if (at == std::string::npos) return false;
          port = static_cast<std::uint16_t>(std::atoi(text.c_str() + at + line.size()));
          return port != 0;
        },
        std::chrono::seconds(30));
    return port;
  }

  mutable std::uint16_t port_ = 0;  // set by ready()
  std::string log_;
  ChildProcess child_;
};

}  // namespace spillway::testing
