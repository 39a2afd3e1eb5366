// The one way the tests start a program: every child process (spillway serve, redis-server,
// redis-sentinel, nginx, haproxy, prometheus, redis-cli monitor …) is a ChildProcess, with one
// hygiene:
// - everything the child needs is prepared before fork(); after it, only system calls;
// - stdin is /dev/null; stdout and stderr go to a log file, opened by the parent (truncated, or
//   appended to);
// - nothing else of the test process is inherited: descriptors from 3 up are closed;
// - it leads its own process group, so that what it starts goes with it when it is stopped, and a
//   signal to the test's group (a Ctrl-C) is not its;
// - it gets SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG), and exits at once
//   when that thread was gone before the request took hold;
// - destroyed: SIGTERM to its group, SIGKILL after `grace` (10 s), and waited for. A child the
//   test waited for itself (waitpid on pid()) is left alone: it is no longer ours to signal.
//
// Labels (tests/support/test_labels.h): the constructor calls require_label for the program
// (label_of_program) unless the caller did for what it starts (ChildOptions::check_label).
//
// Thread safety: none; use an object from one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace spillway::testing {

struct ChildOptions {
  std::string program;      // the file to execute; empty: argv[0] (a full path)
  bool append_log = false;  // add to the log instead of starting it afresh
  bool check_label = true;  // false: the caller called require_label for what this starts
  std::chrono::milliseconds grace{10000};  // on destruction: SIGTERM, then SIGKILL after this
};

class ChildProcess {
 public:
  // Starts argv (argv[0] the program's path unless options.program says otherwise), stdout and
  // stderr to `log`. Throws std::runtime_error when the log cannot be opened or fork() fails; a
  // program that cannot be executed exits 127.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log,
               ChildOptions options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Its process id (and its process group's); -1 once it was stopped or reaped by ended().
  pid_t pid() const { return pid_; }
  // Whether it has not ended yet (does not reap it).
  bool running() const;
  // What it wrote to stdout and stderr so far.
  std::string log() const;

  // When it has ended: what is left of its group killed, it reaped, and its wait status (as
  // waitpid gives it); nullopt while it runs.
  std::optional<int> ended();
  // Calls `answers` (a PING, a health check) until it returns true, the process ends, or
  // `timeout` passes: what a start waits for.
  struct Started {
    bool answered = false;
    std::optional<int> exited;  // its wait status, when it ended first (it is reaped)
  };
  Started wait_started(const std::function<bool()>& answers, std::chrono::milliseconds timeout);
  // Sends `signal` to its process group and waits for it to end, without a limit or, with
  // `grace`, SIGKILL to the group after that long; then SIGKILL to what is left of the group and
  // its wait status (as waitpid gives it; -1 when the test had waited for it itself).
  int stop(int signal, std::optional<std::chrono::milliseconds> grace = std::nullopt);

 private:
  // Whether pid_ is still a child of ours not yet reaped (running, or ended and not waited for).
  bool ours() const;
  // Whether it has ended (not reaped).
  bool exited() const;
  int reap();

  std::string log_;
  std::chrono::milliseconds grace_;
  pid_t pid_ = -1;
};

}  // namespace spillway::testing
