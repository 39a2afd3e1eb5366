#include "src/core/inline_completion.h"

#include <deque>
#include <memory>

namespace spillway {
namespace {

using Queue = std::deque<std::move_only_function<void()>>;

// Plain values, so that reading them costs no per-access initialisation check: the hot path
// (an answer with nothing queued) touches only these.
thread_local bool active = false;      // an inline answer is running
thread_local int direct_scopes = 0;    // DirectCompletion scopes open
thread_local Queue* queued = nullptr;  // answers waiting for the running one, FIFO; made on need

// Owns the thread's queue once it exists, and frees it when the thread ends.
Queue& queue() {
  thread_local std::unique_ptr<Queue> owner;
  if (!owner) {
    owner = std::make_unique<Queue>();
    queued = owner.get();
  }
  return *owner;
}

}  // namespace

namespace inline_completion_detail {

bool enter() {
  if (active) return false;
  active = true;
  return true;
}

void leave() {
  while (queued != nullptr && !queued->empty()) {
    std::move_only_function<void()> next = std::move(queued->front());
    queued->pop_front();
    next();  // may queue more: they run in this loop, never deeper
  }
  active = false;
}

void enqueue(std::move_only_function<void()> work) { queue().push_back(std::move(work)); }

bool direct() { return direct_scopes > 0; }

}  // namespace inline_completion_detail

DirectCompletion::DirectCompletion() { ++direct_scopes; }

DirectCompletion::~DirectCompletion() { --direct_scopes; }

bool in_inline_completion() { return active; }

}  // namespace spillway
