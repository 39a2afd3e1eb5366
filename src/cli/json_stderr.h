// serve's log_format: json for every line it writes to stderr: fd 2 becomes a pipe, and a thread
// turns each line written to it into one JSON object on the real stderr:
//   {"ts":"2026-12-02T01:02:03.456Z","level":"warn","logger":"spillway serve",
//    "msg":"spillway serve: warning: ..."}
// A line that is already a JSON object (it starts with '{': the access log's) passes as it is.
// `logger` is the text before the first ": " when it starts with "spillway"; `level` is "warn"
// when the line says a warning, a refusal, a rejection, a failure or an error, else "info". msg
// is the whole line (so tools matching today's text still find it).
//
// Lines must reach fd 2 in writes of at most PIPE_BUF bytes ending a line (one write(2) per line,
// or AccessLog's json blocks) so that writers on different threads never mix within a line.
//
// Ownership: the object owns the pipe and the thread; its destructor flushes std::cerr and
// stdio's stderr, puts the real stderr back on fd 2, relays what is left and joins the thread.
// Start and destroy it on one thread, while no other thread is writing (start of serve, end).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace spillway::cli {

class JsonStderr {
 public:
  // Null when the pipe cannot be made (stderr stays as it was).
  static std::unique_ptr<JsonStderr> start();
  ~JsonStderr();
  JsonStderr(const JsonStderr&) = delete;
  JsonStderr& operator=(const JsonStderr&) = delete;

  // One text line (no '\n') as its JSON object, with '\n'; now is the time written.
  static std::string to_json_line(std::string_view line);

 private:
  JsonStderr(int read_fd, int real_stderr);
  void relay();

  const int read_fd_;
  const int real_stderr_;
  std::thread thread_;
};

}  // namespace spillway::cli
