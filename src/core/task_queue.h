// What the runtimes (src/core/runtime.cc) share: a scheduled task's state, the rules for running
// and cancelling it, and the queue of tasks ordered by due time.
//
// Times: µs on the runtime's monotonic clock. Thread safety: TaskState is guarded by its own
// mutex; TaskQueue is not thread-safe (its runtime locks around it). Ownership: the queue and the
// task's ScheduledTask share the state.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "spillway/duration.h"

namespace spillway::detail {

struct TaskState {
  TaskState(std::function<void()> task, Micros every) : run(std::move(task)), period(every) {}

  std::function<void()> run;  // emptied once the task has ended
  const Micros period;        // 0: runs once
  std::mutex mutex;
  std::condition_variable idle;  // notified when a run ends
  bool ended = false;            // cancelled, or ran its one time
  bool running = false;
  std::thread::id runner;  // the thread of the run under way

  // Marks a run as started; false when the task has ended (the queue then drops it).
  bool begin_run();
  // Marks the run as over; true when the task is due again (periodic and not cancelled).
  bool end_run();
  // Ends the task; waits for a run under way on another thread.
  void cancel();
};

class TaskQueue {
 public:
  struct Due {
    Micros at;
    std::shared_ptr<TaskState> task;
  };

  void push(Micros at, std::shared_ptr<TaskState> task);
  bool empty() const { return heap_.empty(); }
  Micros next_at() const { return heap_.front().at; }  // not when empty
  Due pop();
  // Tasks not yet ended (cancelled ones stay in the heap until their time comes).
  std::size_t live() const;

 private:
  struct Entry {
    Micros at;
    std::uint64_t seq;  // of scheduling: ties run in the order they were scheduled
    std::shared_ptr<TaskState> task;
    bool operator>(const Entry& other) const {
      return at != other.at ? at > other.at : seq > other.seq;
    }
  };
  std::vector<Entry> heap_;  // a min-heap by (at, seq), through std::push_heap/pop_heap
  std::uint64_t next_seq_ = 0;
};

}  // namespace spillway::detail
