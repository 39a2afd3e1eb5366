// What `spillway serve` says about its backend: one line when it does not answer (naming the
// URL without its password, the error, and what on_error now does), one when it answers again.
// A thread probes the store (Store::probe: a real check's round trip, which also keeps ready(),
// and so /readyz, current) every `interval` and writes a line on each change.
//
// Thread safety: the lines are written from the watching thread, one write(2) each, so they never
// interleave with other lines. Ownership: uses `store`, which must outlive the watcher; the
// destructor stops and joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "spillway/store.h"
#include "src/config/config.h"

namespace spillway::cli {

// "backend redis://… is not answering (connect failed: Connection refused)" (no "spillway serve: "
// prefix, no newline); with `on_error`, followed by "; on_error allow: failing open, requests are
// not limited until it answers" (or what deny and local do).
std::string not_answering_line(const std::string& url, const std::string& error);
std::string not_answering_line(const std::string& url, const std::string& error,
                               policy::OnError on_error);
// "backend redis://… answers again".
std::string answers_again_line(const std::string& url);

class BackendWatch {
 public:
  // `answering`: the state at start (a line was already written if it is false).
  BackendWatch(Store& store, std::string url, policy::OnError on_error, bool answering,
               std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  ~BackendWatch();
  BackendWatch(const BackendWatch&) = delete;
  BackendWatch& operator=(const BackendWatch&) = delete;

 private:
  void run(bool answering);

  Store& store_;
  const std::string url_;  // printable (no password)
  const policy::OnError on_error_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;     // last: started when everything else exists
};

// Writes "spillway serve: " + line + "\n" to stderr in one write(2).
void write_serve_line(const std::string& line);

}  // namespace spillway::cli
