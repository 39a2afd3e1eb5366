// AccessLog (see access_log.h).
#include "src/server/access_log.h"

#include <cstdio>
#include <utility>

namespace spillway::server {

AccessLog::AccessLog(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {}

AccessLog::~AccessLog() { flush(); }

void AccessLog::write(std::string_view line) {
  const std::lock_guard lock(mutex_);
  if (!sink_) {
    buffer_.append(line).push_back('\n');
    if (buffer_.size() >= kFlushBytes) write_buffer_locked();
    return;
  }
  try {
    sink_(line);
  } catch (...) {  // a failing log sink must not take the server down
  }
}

void AccessLog::flush() {
  const std::lock_guard lock(mutex_);
  if (!buffer_.empty()) write_buffer_locked();
}

void AccessLog::write_buffer_locked() {
  std::fwrite(buffer_.data(), 1, buffer_.size(), stderr);
  std::fflush(stderr);
  buffer_.clear();
}

}  // namespace spillway::server
