// Sending a script call again when it was not applied: the one rule that every ScriptTarget
// (SingleNode, ClusterRouter, SentinelTarget) follows, so that a call is never applied twice and
// never outlives its deadline.
//
// What a reply means for the call (resend_step):
//   kWithSource  NOSCRIPT, the first time: the server lacks the script. Send the call again at
//                once, to the same server, as EVAL with the text (which runs and caches it in one
//                atomic step), so the caller never sees NOSCRIPT;
//   kLater       not applied (not_applied): send it again after kResendPause, once the cause may
//                have passed (a cluster settling, a sentinel's failover). SingleNode has no other
//                server and no failover to wait for: it answers with what it got;
//   kAnswer      anything else is the caller's answer: a reply, a Redis error the caller reads,
//                or a failure after which the call may have run.
// Not applied: no connection took the call (never_sent), or the server refused it without
// running it (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY), or it writes nothing
// (Script::writes false: a dry run) and its connection died after it was written. A call that
// writes and whose connection died after it was written may have run: it is never sent again.
//
// Budget: at most kMaxSends sends of one call (a redirection or NOSCRIPT's EVAL included), none
// at or after its deadline, and no pause that would end at or after it. A call out of budget is
// answered kTimeout with its last error (out_of_time).
//
// Thread safety: the functions are pure. A ScriptCall belongs to one call and is used by one
// thread at a time. ResendTimer: at() and close() from any thread (close() not from its own).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/redis/script_target.h"

namespace spillway::redis {

inline constexpr std::chrono::milliseconds kResendPause{20};
inline constexpr int kMaxSends = 32;

// One script call on its way (see ScriptTarget::run for the fields it was given).
struct ScriptCall {
  std::uint16_t slot = 0;
  Script script;
  std::shared_ptr<std::vector<std::string>> args;
  ScriptTarget::Deadline deadline;
  ScriptTarget::Callback done;
  int sends = 0;             // sends so far (count_send)
  bool with_source = false;  // EVAL with the text (after NOSCRIPT)
  std::string last_error;    // why the last send was not the answer

  // Fills args[0..1] for the next send: EVALSHA and the SHA, or EVAL and the text.
  void prepare() { set_script_call(*args, script, with_source); }
  // Runs `done` with `result` (once: `done` is left empty).
  void finish(Result<Reply> result);
};

// True when `reply` (to a call of `script`) says the call was not applied (see above).
bool not_applied(const Script& script, const Result<Reply>& reply);

enum class ResendStep { kAnswer, kWithSource, kLater };

// What to do with `reply`. kWithSource also sets call.with_source; kLater records the reply's
// error text in call.last_error.
ResendStep resend_step(ScriptCall& call, const Result<Reply>& reply);

// Counts a send about to happen now: false (no send left, or the deadline passed) when the call
// must be answered with out_of_time instead.
bool count_send(ScriptCall& call);

// Whether a send after kResendPause would still come before the deadline.
bool can_wait(const ScriptCall& call);

// kTimeout: "<what> in time (<last error>)", e.g. what = "redis cluster: no answer for slot 7"
// (without the parenthesis when no send failed yet).
Error out_of_time(const ScriptCall& call, std::string_view what);

// Runs functions after a pause, on a thread of its own (an Asio timer each). close() stops it:
// every function still waiting then runs at once with `closing` true, each exactly once, and so
// does one handed to at() after close().
class ResendTimer {
 public:
  using Run = std::function<void(bool closing)>;

  ResendTimer();
  ~ResendTimer();  // close()
  ResendTimer(const ResendTimer&) = delete;
  ResendTimer& operator=(const ResendTimer&) = delete;

  void at(ScriptTarget::Deadline when, Run run);
  // Idempotent; joins the thread.
  void close();

 private:
  std::mutex mutex_;
  bool closed_ = false;
  std::set<boost::asio::steady_timer*> timers_;  // waiting
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;  // last: started when everything else exists
};

}  // namespace spillway::redis
