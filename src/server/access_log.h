// The HTTP server's access log: one line per request (and per protocol error), e.g.
// `2026-12-02T01:02:03.456Z method=POST path=/v1/check status=200 us=85 peer=127.0.0.1`.
// The writer gives the line from "method="; write() puts the time in front: RFC 3339, UTC, in
// milliseconds (the wall clock when the line is written, i.e. after the response went out).
//
// With json (server.log_format: json) the writer gives the members of a JSON object instead
// (`"msg":"request","method":"POST",…`) and write() makes the line
// `{"ts":"2026-12-02T01:02:03.456Z","level":"info",<members>}`; buffered lines then leave in
// writes of at most PIPE_BUF bytes, each ending a line, so that no other writer's line can land
// inside one when stderr is a pipe (serve's JSON log relay).
//
// Lines go to the sink given in HttpServerOptions::access_log, one call per line; without a sink
// they are buffered and written to stderr in blocks: when kFlushBytes are buffered, on flush()
// (which the server calls every kFlushInterval and when it stops) and on destruction, so a busy
// server does not pay a system call per request.
//
// Thread safety: write() and flush() may be called from any thread; one mutex serializes them and
// the calls of the sink (so lines leave in the order of their timestamps). A sink that throws loses
// that line, nothing else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
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
  explicit AccessLog(std::function<void(std::string_view)> sink, bool json = false);
  ~AccessLog();  // flush()
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // True when lines go to the stderr buffer (no sink), which needs flush() now and then.
  bool buffered() const { return !sink_; }

  // One line, without its '\n' and without the timestamp, which write() adds.
  void write(std::string_view line);
  // Writes what is buffered to stderr.
  void flush();

 private:
  static constexpr std::size_t kFlushBytes = 32 * 1024;
  void write_buffer_locked();  // buffer_ to stderr; the caller holds mutex_
  // "2026-12-02T01:02:03.456Z", now: a view of stamp_, valid until the next call; the caller
  // holds mutex_.
  std::string_view timestamp_locked();
  // `line` with its time, as text or JSON, and '\n' when `newline`; the caller holds mutex_.
  void append_line_locked(std::string& out, std::string_view line, bool newline);

  const std::function<void(std::string_view)> sink_;
  const bool json_;
  std::mutex mutex_;  // guards the members below and calls of sink_
  std::string buffer_;
  std::string stamped_line_;          // the line handed to sink_, reused
  std::int64_t stamped_second_ = -1;  // the Unix second that stamp_ spells
  std::string stamp_;                 // "2026-12-02T01:02:03.456Z"
  std::size_t second_length_ = 0;     // how much of stamp_ spells the second ("…T01:02:03")
};

}  // namespace spillway::server
