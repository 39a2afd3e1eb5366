// AccessLog (see access_log.h).
#include "src/server/access_log.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <utility>

#include "src/core/json_writer.h"

namespace spillway::server {

AccessLog::AccessLog(std::function<void(std::string_view)> sink, bool json)
    : sink_(std::move(sink)), json_(json) {}

AccessLog::~AccessLog() { flush(); }

std::string_view AccessLog::timestamp_locked() {
  const auto now = std::chrono::system_clock::now();
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::int64_t seconds = millis / 1000 - (millis % 1000 < 0 ? 1 : 0);
  const int fraction = static_cast<int>(millis - seconds * 1000);
  if (seconds != stamped_second_) {  // a new second: its "YYYY-MM-DDTHH:MM:SS", once
    const std::time_t time = static_cast<std::time_t>(seconds);
    std::tm utc{};
    gmtime_r(&time, &utc);
    char text[32];
    const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    stamp_.assign(text, length);
    stamped_second_ = seconds;
    second_length_ = length;
  }
  char tail[8];  // ".456Z" and the terminator
  std::snprintf(tail, sizeof tail, ".%03dZ", fraction);
  stamp_.resize(second_length_);
  stamp_.append(tail);
  return stamp_;
}

void AccessLog::append_line_locked(std::string& out, std::string_view line, bool newline) {
  if (json_) {
    out.push_back('{');
    JsonWriter::in_object(out, false)
        .member("ts", timestamp_locked())
        .member("level", "info")
        .members(line)
        .end_object();
  } else {
    out.append(timestamp_locked()).append(" ").append(line);
  }
  if (newline) out.push_back('\n');
}

void AccessLog::write(std::string_view line) {
  const std::lock_guard lock(mutex_);
  if (!sink_) {
    append_line_locked(buffer_, line, true);
    if (buffer_.size() >= kFlushBytes) write_buffer_locked();
    return;
  }
  stamped_line_.clear();
  append_line_locked(stamped_line_, line, false);
  try {
    sink_(stamped_line_);
  } catch (...) {  // a failing log sink must not take the server down
  }
}

void AccessLog::flush() {
  const std::lock_guard lock(mutex_);
  if (!buffer_.empty()) write_buffer_locked();
}

void AccessLog::write_buffer_locked() {
  if (json_) {  // whole lines, at most PIPE_BUF bytes a write (a longer line alone)
    std::string_view rest = buffer_;
    while (!rest.empty()) {
      std::size_t end = rest.size() <= PIPE_BUF ? rest.size() : rest.rfind('\n', PIPE_BUF - 1) + 1;
      if (end == 0) end = rest.find('\n') + 1;  // npos + 1 == 0: the buffer always ends a line
      (void)!::write(2, rest.data(), end);
      rest.remove_prefix(end);
    }
    buffer_.clear();
    return;
  }
  std::fwrite(buffer_.data(), 1, buffer_.size(), stderr);
  std::fflush(stderr);
  buffer_.clear();
}

}  // namespace spillway::server
