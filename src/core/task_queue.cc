#include "src/core/task_queue.h"

#include <algorithm>

namespace spillway::detail {

bool TaskState::begin_run() {
  std::lock_guard lock(mutex);
  if (ended) return false;
  running = true;
  runner = std::this_thread::get_id();
  return true;
}

bool TaskState::end_run() {
  std::function<void()> done;  // destroyed after the lock is let go
  bool again = false;
  {
    std::lock_guard lock(mutex);
    running = false;
    if (period == 0) ended = true;
    again = !ended;
    if (ended) done = std::move(run);
  }
  idle.notify_all();
  return again;
}

void TaskState::cancel() {
  std::function<void()> done;
  {
    std::unique_lock lock(mutex);
    ended = true;
    if (running && runner == std::this_thread::get_id()) return;  // end_run() lets `run` go
    idle.wait(lock, [this] { return !running; });
    done = std::move(run);
  }
}

void TaskQueue::push(Micros at, std::shared_ptr<TaskState> task) {
  heap_.push_back(Entry{at, next_seq_++, std::move(task)});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
}

TaskQueue::Due TaskQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
  Entry entry = std::move(heap_.back());
  heap_.pop_back();
  return Due{entry.at, std::move(entry.task)};
}

std::size_t TaskQueue::live() const {
  return static_cast<std::size_t>(std::count_if(heap_.begin(), heap_.end(), [](const Entry& e) {
    std::lock_guard lock(e.task->mutex);
    return !e.task->ended;
  }));
}

}  // namespace spillway::detail
