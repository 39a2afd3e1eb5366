// Answers that are ready at once, delivered without letting a chain of them grow the stack.
//
// A store that can answer check_async() on the caller's own stack (the memory store, an open
// circuit breaker, a cached denial, invalid input) hands the answer to complete_inline() instead
// of calling the callback itself. On a thread that is not already running such an answer, the
// callback runs at once, before complete_inline() returns (no allocation, no thread hop). On a
// thread that is (the callback issued another check that was answered at once), the answer is
// queued on this thread and the outermost complete_inline() runs it after the current callback
// returns, in the order they were queued. So a caller that issues its next check from inside the
// callback loops instead of recursing: the stack depth stays bounded however long the chain.
//
// Consequence for callers: a nested answer arrives after check_async() returned, on the same
// thread. So a thread that waits for an answer must open a DirectCompletion around the call that
// asks for it (Store::decide_and_wait does): inside one, answers ready at once are delivered at
// once, even nested, and the wait cannot be for an answer queued behind itself.
//
// Thread safety: one queue per thread (thread_local); nothing is shared between threads.
// Ownership: the queue owns the callbacks and answers it holds until it runs them.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>

namespace spillway {
namespace inline_completion_detail {

// True when the calling thread was not running an inline answer: it now is, and must call
// leave() when its callback returned.
bool enter();
// Runs the answers queued meanwhile (FIFO, including those they queue), then ends the frame.
void leave();
// Queues `work` behind the thread's running inline answer.
void enqueue(std::move_only_function<void()> work);
// Whether a DirectCompletion is open on this thread.
bool direct();

}  // namespace inline_completion_detail

// While one is alive, complete_inline() on this thread delivers at once, never queues. For a
// caller that blocks until its answer (it chains nothing, so the stack cannot grow). Nests.
class DirectCompletion {
 public:
  DirectCompletion();
  ~DirectCompletion();
  DirectCompletion(const DirectCompletion&) = delete;
  DirectCompletion& operator=(const DirectCompletion&) = delete;
};

namespace inline_completion_detail {}  // namespace inline_completion_detail

// Delivers `value` to `done` (moved from): now, or after the running inline answer (see above).
template <class Done, class Value>
void complete_inline(Done& done, Value&& value) {
  if (inline_completion_detail::enter()) {
    struct Leave {
      ~Leave() { inline_completion_detail::leave(); }
    } leave;
    done(std::forward<Value>(value));
    return;
  }
  if (inline_completion_detail::direct()) {
    done(std::forward<Value>(value));
    return;
  }
  inline_completion_detail::enqueue(
      [done = std::move(done), value = std::decay_t<Value>(std::forward<Value>(value))]() mutable {
        done(std::move(value));
      });
}

// Whether the calling thread is running an inline answer right now (for tests and assertions).
bool in_inline_completion();

}  // namespace spillway
