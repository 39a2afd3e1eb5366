// The tests' one spawner (see child_process.h).
#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/test_labels.h"

namespace spillway::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log,
                           ChildOptions options)
    : log_(log), grace_(options.grace) {
  const std::string program = options.program.empty() ? argv.at(0) : options.program;
  if (options.check_label) require_label(label_of_program(program), program);
  // Everything the child needs is prepared before fork(): after it, only system calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.append_log ? O_APPEND : O_TRUNC);
  const int log_fd = ::open(log.c_str(), flags, 0600);
  if (log_fd < 0) {
    throw std::runtime_error("ChildProcess: cannot open " + log + ": " + std::strerror(errno));
  }
  // Nothing to read: a child never waits on the test's terminal or the pipe ctest gave it.
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    const int error = errno;
    ::close(log_fd);
    throw std::runtime_error(std::string("ChildProcess: cannot open /dev/null: ") +
                             std::strerror(error));
  }
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(log_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("ChildProcess: fork(): ") + std::strerror(error));
  }
  if (child == 0) {
    ::setpgid(0, 0);                     // its own process group
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the thread that started it
    if (::getppid() != parent) ::_exit(127);
    if (::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(log_fd, STDOUT_FILENO) < 0 ||
        ::dup2(log_fd, STDERR_FILENO) < 0) {
      ::_exit(126);
    }
    ::close_range(3, ~0U, 0);  // no inherited sockets or files of the test process
    ::execv(program.c_str(), args.data());
    ::_exit(127);
  }
  ::setpgid(child, child);  // as the child does: whichever runs first (an error once it has exec'd)
  ::close(log_fd);
  ::close(null_fd);
  pid_ = child;
}

ChildProcess::Started ChildProcess::wait_started(const std::function<bool()>& answers,
                                                 std::chrono::milliseconds timeout) {
  Started started;
  started.answered = wait_until(
      [&] {
        started.exited = ended();
        return started.exited.has_value() || answers();
      },
      timeout);
  if (started.exited) started.answered = false;
  return started;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && ours()) stop(SIGTERM, grace_);
}

bool ChildProcess::ours() const {
  siginfo_t info{};
  return pid_ > 0 && ::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

bool ChildProcess::exited() const {
  siginfo_t info{};
  return ::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid_;
}

bool ChildProcess::running() const { return ours() && !exited(); }

std::string ChildProcess::log() const { return read_file(log_); }

int ChildProcess::reap() {
  // The leader not reaped yet: the group's id is still its own, so this kills no stranger.
  ::kill(-pid_, SIGKILL);
  int status = -1;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

std::optional<int> ChildProcess::ended() {
  if (pid_ <= 0) return std::nullopt;
  if (!ours()) {
    pid_ = -1;
    return -1;
  }
  if (!exited()) return std::nullopt;
  return reap();
}

int ChildProcess::stop(int signal, std::optional<std::chrono::milliseconds> grace) {
  if (pid_ <= 0) return -1;
  if (!ours()) {  // the test waited for it itself
    pid_ = -1;
    return -1;
  }
  ::kill(-pid_, signal);
  if (grace) {
    wait_until([this] { return exited(); }, *grace);
  } else {
    siginfo_t info{};
    while (::waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
  }
  return reap();
}

}  // namespace spillway::testing
