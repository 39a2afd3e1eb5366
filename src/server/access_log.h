// The HTTP server's access log: one line per request (and per protocol error), e.g.
// `method=POST path=/v1/check status=200 us=85 peer=127.0.0.1`.
//
// Lines go to the sink given in HttpServerOptions::access_log, one call per line; without a sink
// they are buffered and written to stderr in blocks: when kFlushBytes are buffered, on flush()
// (which the server calls every kFlushInterval and when it stops) and on destruction, so a busy
// server does not pay a system call per request.
//
// Thread safety: write() and flush() may be called from any thread; one mutex serializes them and
// the calls of the sink. A sink that throws loses that line, nothing else.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace spillway::server {

class AccessLog {
 public:
  // How often the owner should call flush() when buffered().
  static constexpr std::chrono::milliseconds kFlushInterval{100};

  // An empty sink: buffered lines to stderr.
  explicit AccessLog(std::function<void(std::string_view)> sink);
  ~AccessLog();  // flush()
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // True when lines go to the stderr buffer (no sink), which needs flush() now and then.
  bool buffered() const { return !sink_; }

  // One line, without its '\n'.
  void write(std::string_view line);
  // Writes what is buffered to stderr.
  void flush();

 private:
  static constexpr std::size_t kFlushBytes = 32 * 1024;
  void write_buffer_locked();  // buffer_ to stderr; the caller holds mutex_

  const std::function<void(std::string_view)> sink_;
  std::mutex mutex_;  // guards buffer_ and calls of sink_
  std::string buffer_;
};

}  // namespace spillway::server
