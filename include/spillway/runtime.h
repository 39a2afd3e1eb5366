// The one seam for time: the wall clock that decisions read, the monotonic clock that intervals
// read, and the place where background work runs (a task after a delay, or every period).
//
// Times are microseconds: wall time since the Unix epoch, monotonic time since an arbitrary start
// (the two never mix). A store, a lease store, the rules watcher... each takes a Runtime; tests
// give them a ManualRuntime and move time with advance(), which runs the tasks that fall due on
// the calling thread, in time order, instead of sleeping and hoping a thread ran.
//
// What does not go through it, and why (ARCHITECTURE.md, "Time"): the Redis client's socket
// timers and deadlines (Asio's steady clock, on the client's own event loop), and latencies
// measured for metrics and logs (a measurement, not a timer).
//
// Thread safety: every member from any thread. Tasks of one runtime run one at a time (a task
// that blocks delays the others: background work that waits on a network keeps its own thread).
// Ownership: a ScheduledTask owns its schedule, not the runtime; it may outlive the runtime.
#pragma once

#include <functional>
#include <memory>

#include "spillway/clock.h"
#include "spillway/duration.h"

namespace spillway {

namespace detail {
struct TaskState;
}  // namespace detail

// A task's schedule. Destroying it, or cancel(), ends the schedule; a run under way on another
// thread is waited for, so that what the task uses can be destroyed right after. From inside the
// task itself it does not wait (the run ends when the task returns).
class ScheduledTask {
 public:
  ScheduledTask() = default;
  explicit ScheduledTask(std::shared_ptr<detail::TaskState> state) : state_(std::move(state)) {}
  ScheduledTask(ScheduledTask&&) noexcept = default;
  ScheduledTask& operator=(ScheduledTask&& other) noexcept;
  ScheduledTask(const ScheduledTask&) = delete;
  ScheduledTask& operator=(const ScheduledTask&) = delete;
  ~ScheduledTask() { cancel(); }

  void cancel();
  bool scheduled() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::TaskState> state_;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // The wall clock (µs since the epoch) and the monotonic clock (µs since an arbitrary start).
  virtual std::shared_ptr<const Clock> wall_clock() const = 0;
  virtual std::shared_ptr<const Clock> monotonic_clock() const = 0;
  Micros now() const { return wall_clock()->now(); }
  Micros monotonic_now() const { return monotonic_clock()->now(); }

  // Runs `task` once, `delay` µs from now on the monotonic clock (0: as soon as the runtime can).
  virtual ScheduledTask after(Micros delay, std::function<void()> task) = 0;
  // Runs `task` every `period` µs (> 0), the first run one period from now; the next run is due
  // one period after the last one ended (a run that takes longer than a period is not followed
  // by another at once, and missed runs are not made up).
  virtual ScheduledTask every(Micros period, std::function<void()> task) = 0;
};

// The process's runtime: SystemClock, SteadyClock, and one thread for every task, started with
// the first one. Never null; lives while anything holds it.
std::shared_ptr<Runtime> system_runtime();

// A runtime whose time moves only when told to. advance(d) moves both clocks by d, stopping at
// each task that falls due on the way to run it on the calling thread (the clocks then read its
// due time), in order of due time, then of scheduling.
class ManualRuntime final : public Runtime {
 public:
  explicit ManualRuntime(Micros wall_start = 0, Micros monotonic_start = 0);
  ~ManualRuntime() override;

  std::shared_ptr<const Clock> wall_clock() const override;
  std::shared_ptr<const Clock> monotonic_clock() const override;
  ScheduledTask after(Micros delay, std::function<void()> task) override;
  ScheduledTask every(Micros period, std::function<void()> task) override;

  // Returns the number of task runs. One call at a time (a second waits); not from inside a task.
  std::size_t advance(Micros d);
  // Runs what is due now without moving the clocks (an after(0, ...)).
  std::size_t run_due() { return advance(0); }
  // Tasks scheduled and not yet ended.
  std::size_t pending() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
