#include "src/core/inline_completion.h"

#include <deque>

namespace spillway {
namespace {

struct Frame {
  bool active = false;                                 // an inline answer is running
  int direct = 0;                                      // DirectCompletion scopes open
  std::deque<std::move_only_function<void()>> queued;  // answers waiting for it, FIFO
};

thread_local Frame frame;

}  // namespace

namespace inline_completion_detail {

bool enter() {
  if (frame.active) return false;
  frame.active = true;
  return true;
}

void leave() {
  while (!frame.queued.empty()) {
    std::move_only_function<void()> next = std::move(frame.queued.front());
    frame.queued.pop_front();
    next();  // may queue more: they run in this loop, never deeper
  }
  frame.active = false;
}

void enqueue(std::move_only_function<void()> work) { frame.queued.push_back(std::move(work)); }

bool direct() { return frame.direct > 0; }

}  // namespace inline_completion_detail

DirectCompletion::DirectCompletion() { ++frame.direct; }

DirectCompletion::~DirectCompletion() { --frame.direct; }

bool in_inline_completion() { return frame.active; }

}  // namespace spillway
