// Blocks until an asynchronous call's callback delivered its value: the one way the synchronous
// forms (Store::check, Policy::decide) are built on the asynchronous ones.
//
// `start(callback)` must arrange for `callback(T)` to run exactly once, on any thread. Answers
// ready at once are delivered during start() even when this thread is inside an inline answer's
// callback (a DirectCompletion is open meanwhile, src/core/inline_completion.h), so the wait can
// never be for an answer queued behind itself. Never call it on a thread that must run the
// answer (an event loop whose I/O delivers it).
//
// Thread safety: the value is handed over under a mutex (or, answered during start() on this
// thread, directly); this returns only after the callback let go of it. Ownership: the callback
// refers to this frame; it must not be called twice.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "src/core/inline_completion.h"

namespace spillway {

template <class T, class Start>
T wait_for_answer(Start&& start) {
  struct Slot {
    std::mutex mutex;
    std::condition_variable answered;
    std::optional<T> answer;
    std::thread::id caller = std::this_thread::get_id();
    bool inline_answer = false;  // answered on the caller's thread, during start(): no lock
  } slot;
  {
    DirectCompletion direct;
    std::forward<Start>(start)([&slot](T answer) {
      // On the caller's own thread the callback can only run during start() (the caller is
      // blocked below otherwise), and no other thread touches the slot then.
      if (std::this_thread::get_id() == slot.caller) {
        slot.answer.emplace(std::move(answer));
        slot.inline_answer = true;
        return;
      }
      std::lock_guard lock(slot.mutex);
      slot.answer.emplace(std::move(answer));
      slot.answered.notify_one();
    });
  }
  if (slot.inline_answer) return std::move(*slot.answer);
  std::unique_lock lock(slot.mutex);
  slot.answered.wait(lock, [&slot] { return slot.answer.has_value(); });
  return std::move(*slot.answer);
}

// The same for a call that always answers before start() returns, on this thread (a store that
// decides inline): no lock, no wait. `unanswered` is returned if it broke that promise.
template <class T, class Start>
T take_inline_answer(Start&& start, T unanswered) {
  std::optional<T> answer;
  {
    DirectCompletion direct;
    std::forward<Start>(start)([&answer](T value) { answer.emplace(std::move(value)); });
  }
  return answer ? std::move(*answer) : std::move(unanswered);
}

}  // namespace spillway
