// The resend rule and ResendTimer (see resend.h).
#include "src/redis/resend.h"

#include <boost/asio/post.hpp>

namespace spillway::redis {
namespace {

// Refusals after which the server ran nothing, and the same call succeeds once it has settled.
bool refused_without_running(std::string_view text) {
  for (std::string_view prefix : {"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY"}) {
    if (text.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace

void ScriptCall::finish(Result<Reply> result) {
  ScriptTarget::Callback callback = std::move(done);
  done = nullptr;
  if (callback) callback(std::move(result));
}

bool not_applied(const Script& script, const Result<Reply>& reply) {
  if (!reply) return never_sent(reply.error()) || !script.writes;
  return reply->is_error() && refused_without_running(reply->text);
}

ResendStep resend_step(ScriptCall& call, const Result<Reply>& reply) {
  if (reply && reply->is_error() && reply->text.starts_with("NOSCRIPT") && !call.with_source) {
    call.with_source = true;
    return ResendStep::kWithSource;
  }
  if (!not_applied(call.script, reply)) return ResendStep::kAnswer;
  call.last_error = reply ? reply->text : reply.error().message;
  return ResendStep::kLater;
}

bool count_send(ScriptCall& call) {
  return socket_now() < call.deadline && ++call.sends <= kMaxSends;
}

bool can_wait(const ScriptCall& call) { return socket_now() + kResendPause < call.deadline; }

Error out_of_time(const ScriptCall& call, std::string_view what) {
  std::string message = std::string(what) + " in time";
  if (!call.last_error.empty()) message += " (" + call.last_error + ")";
  return Error{Errc::kTimeout, std::move(message)};
}

ResendTimer::ResendTimer()
    : work_(boost::asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

ResendTimer::~ResendTimer() { close(); }

void ResendTimer::at(ScriptTarget::Deadline when, Run run) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_, when);
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      timers_.insert(timer.get());
      timer->async_wait([this, timer, run = std::move(run)](const boost::system::error_code&) {
        bool closing = false;
        {
          std::lock_guard inner(mutex_);
          timers_.erase(timer.get());
          closing = closed_;
        }
        run(closing);
      });
      return;
    }
  }
  run(true);
}

void ResendTimer::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  boost::asio::post(io_, [this] {
    std::lock_guard lock(mutex_);
    for (boost::asio::steady_timer* timer : timers_) timer->cancel();
  });
  work_.reset();  // run() returns once every waiting function has run
  thread_.join();
}

}  // namespace spillway::redis
