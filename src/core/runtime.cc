#include "spillway/runtime.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "src/core/task_queue.h"

namespace spillway {

using detail::TaskQueue;
using detail::TaskState;

ScheduledTask& ScheduledTask::operator=(ScheduledTask&& other) noexcept {
  if (this != &other) {
    cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

void ScheduledTask::cancel() {
  if (!state_) return;
  state_->cancel();
  state_.reset();
}

namespace {

// The process's runtime: one thread that sleeps until the next task is due on the steady clock.
class ThreadRuntime final : public Runtime {
 public:
  ~ThreadRuntime() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (!thread_.joinable()) return;
    // The last holder may let go on the runtime's own thread (a task ending a store at exit).
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  std::shared_ptr<const Clock> wall_clock() const override { return wall_; }
  std::shared_ptr<const Clock> monotonic_clock() const override { return monotonic_; }

  ScheduledTask after(Micros delay, std::function<void()> task) override {
    return schedule(std::max<Micros>(0, delay), 0, std::move(task));
  }
  ScheduledTask every(Micros period, std::function<void()> task) override {
    return schedule(std::max<Micros>(1, period), std::max<Micros>(1, period), std::move(task));
  }

 private:
  ScheduledTask schedule(Micros delay, Micros period, std::function<void()> run) {
    auto task = std::make_shared<TaskState>(std::move(run), period);
    {
      std::lock_guard lock(mutex_);
      queue_.push(monotonic_->now() + delay, task);
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    }
    wake_.notify_all();
    return ScheduledTask(std::move(task));
  }

  void loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (queue_.empty()) {
        wake_.wait(lock);
        continue;
      }
      const Micros at = queue_.next_at();
      if (at > monotonic_->now()) {
        wake_.wait_until(lock,
                         std::chrono::steady_clock::time_point(std::chrono::microseconds(at)));
        continue;
      }
      TaskQueue::Due due = queue_.pop();
      lock.unlock();
      const bool ran = due.task->begin_run();
      if (ran) due.task->run();
      const bool again = ran && due.task->end_run();
      lock.lock();
      if (again) queue_.push(monotonic_->now() + due.task->period, due.task);  // after this run
    }
  }

  const std::shared_ptr<const Clock> wall_ = std::make_shared<SystemClock>();
  const std::shared_ptr<const Clock> monotonic_ = std::make_shared<SteadyClock>();
  std::mutex mutex_;
  std::condition_variable wake_;
  TaskQueue queue_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first task
};

}  // namespace

std::shared_ptr<Runtime> system_runtime() {
  static const std::shared_ptr<Runtime> runtime = std::make_shared<ThreadRuntime>();
  return runtime;
}

struct ManualRuntime::Impl {
  std::shared_ptr<ManualClock> wall, monotonic;
  std::mutex advancing;  // one advance() at a time: its tasks run one at a time, in order
  mutable std::mutex mutex;
  TaskQueue queue;

  ScheduledTask schedule(Micros delay, Micros period, std::function<void()> run) {
    auto task = std::make_shared<TaskState>(std::move(run), period);
    std::lock_guard lock(mutex);
    queue.push(monotonic->now() + delay, task);
    return ScheduledTask(std::move(task));
  }

  // Moves both clocks to monotonic time `to` (never back).
  void move_to(Micros to) {
    const Micros step = to - monotonic->now();
    if (step <= 0) return;
    wall->advance(step);
    monotonic->advance(step);
  }
};

ManualRuntime::ManualRuntime(Micros wall_start, Micros monotonic_start)
    : impl_(std::make_unique<Impl>()) {
  impl_->wall = std::make_shared<ManualClock>(wall_start);
  impl_->monotonic = std::make_shared<ManualClock>(monotonic_start);
}

ManualRuntime::~ManualRuntime() = default;

std::shared_ptr<const Clock> ManualRuntime::wall_clock() const { return impl_->wall; }
std::shared_ptr<const Clock> ManualRuntime::monotonic_clock() const { return impl_->monotonic; }

ScheduledTask ManualRuntime::after(Micros delay, std::function<void()> task) {
  return impl_->schedule(std::max<Micros>(0, delay), 0, std::move(task));
}

ScheduledTask ManualRuntime::every(Micros period, std::function<void()> task) {
  return impl_->schedule(std::max<Micros>(1, period), std::max<Micros>(1, period), std::move(task));
}

std::size_t ManualRuntime::advance(Micros d) {
  std::lock_guard one_at_a_time(impl_->advancing);
  std::unique_lock lock(impl_->mutex);
  const Micros target = impl_->monotonic->now() + std::max<Micros>(0, d);
  std::size_t runs = 0;
  while (!impl_->queue.empty() && impl_->queue.next_at() <= target) {
    TaskQueue::Due due = impl_->queue.pop();
    impl_->move_to(due.at);
    lock.unlock();
    const bool ran = due.task->begin_run();
    if (ran) {
      due.task->run();
      ++runs;
    }
    const bool again = ran && due.task->end_run();
    lock.lock();
    if (again) impl_->queue.push(impl_->monotonic->now() + due.task->period, due.task);
  }
  impl_->move_to(target);
  return runs;
}

std::size_t ManualRuntime::pending() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->queue.live();
}

}  // namespace spillway
