#include "src/cli/backend_watch.h"

#include <unistd.h>

#include <utility>

#include "src/core/backend_schemes.h"

namespace spillway::cli {
namespace {

std::string_view what_on_error_does(policy::OnError on_error) {
  switch (on_error) {
    case policy::OnError::kAllow:
      return "on_error allow: failing open, requests are not limited until it answers";
    case policy::OnError::kDeny:
      return "on_error deny: failing closed, every request is denied until it answers";
    case policy::OnError::kLocal:
      return "on_error local: each instance limits on its own, in process, until it answers";
  }
  return "";
}

// The cause alone when the error wraps it ("redis host:port: not connected (CAUSE)", maybe
// followed by "; " and the cause in plain words): the line names the backend already.
std::string cause_of(const std::string& error) {
  static constexpr std::string_view kWrapped = ": not connected (";
  const std::size_t at = error.find(kWrapped);
  if (at == std::string::npos) return error;
  const std::size_t start = at + kWrapped.size();
  // The parenthesis that closes the wrap: the first one at the end or before "; ".
  for (std::size_t close = error.find(')', start); close != std::string::npos;
       close = error.find(')', close + 1)) {
    if (close + 1 == error.size() || error.compare(close + 1, 2, "; ") == 0) {
      return error.substr(start, close - start) + error.substr(close + 1);
    }
  }
  return error;
}

}  // namespace

std::string not_answering_line(const std::string& url, const std::string& error) {
  return "backend " + printable_url(url) + " is not answering (" + cause_of(error) + ")";
}

std::string not_answering_line(const std::string& url, const std::string& error,
                               policy::OnError on_error) {
  return not_answering_line(url, error) + "; " + std::string(what_on_error_does(on_error));
}

std::string answers_again_line(const std::string& url) {
  return "backend " + printable_url(url) + " answers again";
}

void write_serve_line(const std::string& line) {
  const std::string text = "spillway serve: " + line + "\n";
  (void)!::write(2, text.data(), text.size());
}

BackendWatch::BackendWatch(Store& store, std::string url, policy::OnError on_error, bool answering,
                           std::chrono::milliseconds interval)
    : store_(store),
      url_(std::move(url)),
      on_error_(on_error),
      interval_(interval),
      thread_([this, answering] { run(answering); }) {}

BackendWatch::~BackendWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

void BackendWatch::run(bool answering) {
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    // A real check's round trip (Store::probe): what ready(), /readyz and gRPC health read.
    Result<void> now = store_.probe();
    if (now.has_value() != answering) {
      answering = now.has_value();
      write_serve_line(answering ? answers_again_line(url_)
                                 : not_answering_line(url_, now.error().message, on_error_));
    }
    lock.lock();
  }
}

}  // namespace spillway::cli
