// JsonStderr (see json_stderr.h).
#include "src/cli/json_stderr.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "src/core/json_writer.h"

namespace spillway::cli {
namespace {

void write_all_fd(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) return;  // stderr gone: nothing else to tell
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// "2026-12-02T01:02:03.456Z", now.
std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(millis % 1000));
  return text;
}

bool says_trouble(std::string_view line) {
  for (std::string_view word : {"warning", "refused", "rejected", "failed", "error",
                                "not answering", "not reloaded", "not starting"}) {
    if (line.find(word) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::string JsonStderr::to_json_line(std::string_view line) {
  std::string out;
  JsonWriter json(out);
  json.begin_object()
      .member("ts", now_rfc3339())
      .member("level", says_trouble(line) ? "warn" : "info");
  if (line.starts_with("spillway")) {
    const std::size_t colon = line.find(": ");
    if (colon != std::string_view::npos && colon < 40) json.member("logger", line.substr(0, colon));
  }
  json.member("msg", line).end_object();
  out.push_back('\n');
  return out;
}

std::unique_ptr<JsonStderr> JsonStderr::start() {
  std::fflush(stderr);
  std::cerr.flush();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  const int real = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (real < 0 || ::dup2(fds[1], 2) < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    if (real >= 0) ::close(real);
    return nullptr;
  }
  ::close(fds[1]);  // fd 2 is now the only write end: putting stderr back ends the relay
  std::unique_ptr<JsonStderr> relay(new JsonStderr(fds[0], real));
  relay->thread_ = std::thread([raw = relay.get()] { raw->relay(); });
  return relay;
}

JsonStderr::JsonStderr(int read_fd, int real_stderr)
    : read_fd_(read_fd), real_stderr_(real_stderr) {}

JsonStderr::~JsonStderr() {
  std::cerr.flush();
  std::fflush(stderr);
  ::dup2(real_stderr_, 2);  // closes the pipe's write end: the relay reads to its end
  if (thread_.joinable()) thread_.join();
  ::close(read_fd_);
  ::close(real_stderr_);
}

void JsonStderr::relay() {
  std::string pending;
  char chunk[8192];
  while (true) {
    const ssize_t n = ::read(read_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    std::string out;
    for (std::size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string_view line(pending.data() + start, end - start);
      if (line.starts_with('{')) {
        out.append(line).push_back('\n');
      } else if (!line.empty()) {
        out.append(to_json_line(line));
      }
    }
    pending.erase(0, start);
    if (!out.empty()) write_all_fd(real_stderr_, out);
  }
  if (!pending.empty())
    write_all_fd(real_stderr_, pending.starts_with('{') ? pending + "\n" : to_json_line(pending));
}

}  // namespace spillway::cli
