// The runtime: ManualRuntime's order and clocks, a task that cancels itself, and the process
// runtime's thread (a task runs there, a periodic one repeats and stops when cancelled, cancel()
// waits for a run under way, a task may cancel itself or destroy the object that owns it).
#include "spillway/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/poll.h"

namespace spillway {
namespace {

using spillway::testing::wait_until;

TEST(ManualRuntime, RunsDueTasksInTimeOrderWithTheClocksAtTheirTimes) {
  ManualRuntime runtime(1'000'000, 50);
  std::vector<std::string> seen;
  auto say = [&](const std::string& name) {
    return [&, name] {
      seen.push_back(name + "@" + std::to_string(runtime.monotonic_now()) + "/" +
                     std::to_string(runtime.now()));
    };
  };
  ScheduledTask late = runtime.after(30, say("late"));
  ScheduledTask early = runtime.after(10, say("early"));
  ScheduledTask tie = runtime.after(10, say("tie"));
  ScheduledTask tick = runtime.every(25, say("tick"));
  EXPECT_EQ(runtime.pending(), 4u);
  EXPECT_EQ(runtime.advance(9), 0u);
  EXPECT_EQ(runtime.advance(71), 6u);  // to 130
  EXPECT_EQ(seen,
            (std::vector<std::string>{"early@60/1000010", "tie@60/1000010", "tick@75/1000025",
                                      "late@80/1000030", "tick@100/1000050", "tick@125/1000075"}))
      << "six runs: the periodic one at 75, 100 and 125";
  EXPECT_EQ(runtime.monotonic_now(), 130);
  EXPECT_EQ(runtime.now(), 1'000'080);
  EXPECT_EQ(runtime.pending(), 1u) << "the one-time tasks ended; the periodic one stays";
}

TEST(ManualRuntime, ACancelledTaskNeverRunsAndAnEndedHandleIsHarmless) {
  ManualRuntime runtime;
  int runs = 0;
  ScheduledTask task = runtime.every(10, [&] { ++runs; });
  runtime.advance(25);
  EXPECT_EQ(runs, 2);
  task.cancel();
  EXPECT_FALSE(task.scheduled());
  runtime.advance(100);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(runtime.pending(), 0u);
  ScheduledTask once = runtime.after(0, [&] { ++runs; });
  EXPECT_EQ(runtime.run_due(), 1u);
  EXPECT_EQ(runs, 3);
  once.cancel();  // ran already: nothing to wait for
}

TEST(ManualRuntime, ATaskScheduledByATaskRunsInTheSameAdvanceWhenDue) {
  ManualRuntime runtime;
  std::vector<Micros> at;
  ScheduledTask second;
  ScheduledTask first = runtime.after(5, [&] {
    at.push_back(runtime.monotonic_now());
    second = runtime.after(5, [&] { at.push_back(runtime.monotonic_now()); });
  });
  runtime.advance(20);
  EXPECT_EQ(at, (std::vector<Micros>{5, 10}));
}

TEST(ManualRuntime, ATaskMayCancelItself) {
  ManualRuntime runtime;
  int runs = 0;
  ScheduledTask task;
  task = runtime.every(10, [&] {
    if (++runs == 3) task.cancel();
  });
  runtime.advance(1000);
  EXPECT_EQ(runs, 3);
}

TEST(SystemRuntime, RunsATaskOnItsThreadAndRepeatsAPeriodicOne) {
  std::shared_ptr<Runtime> runtime = system_runtime();
  ASSERT_EQ(runtime, system_runtime()) << "one runtime per process";
  std::promise<std::thread::id> ran;
  ScheduledTask once = runtime->after(0, [&] { ran.set_value(std::this_thread::get_id()); });
  std::future<std::thread::id> on = ran.get_future();
  ASSERT_EQ(on.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_NE(on.get(), std::this_thread::get_id());
  std::atomic<int> ticks{0};
  ScheduledTask tick = runtime->every(1000, [&] { ++ticks; });
  EXPECT_TRUE(wait_until([&] { return ticks.load() >= 3; }, std::chrono::seconds(30)));
  tick.cancel();
  const int after_cancel = ticks.load();
  std::promise<void> passed;
  ScheduledTask marker = runtime->after(3000, [&] { passed.set_value(); });
  ASSERT_EQ(passed.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(ticks.load(), after_cancel) << "a cancelled periodic task ran again";
}

TEST(SystemRuntime, CancelWaitsForARunUnderWay) {
  std::shared_ptr<Runtime> runtime = system_runtime();
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<bool> finished{false};
  ScheduledTask task = runtime->after(0, [&] {
    started.set_value();
    go.wait();
    finished = true;
  });
  ASSERT_EQ(started.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    task.cancel();
    cancelled = true;
  });
  // The run is held; cancel() must not return before it ends. A short look is enough to catch a
  // cancel() that returns at once (it would set `cancelled` within microseconds).
  EXPECT_FALSE(wait_until([&] { return cancelled.load(); }, std::chrono::milliseconds(100)));
  release.set_value();
  canceller.join();
  EXPECT_TRUE(finished.load()) << "cancel() returned before the run ended";
}

TEST(SystemRuntime, APeriodicTaskMayCancelItself) {
  std::shared_ptr<Runtime> runtime = system_runtime();
  std::atomic<int> runs{0};
  std::promise<void> third;
  ScheduledTask task;
  std::mutex handle;  // the task reads `task` while this thread may still be assigning it
  {
    std::lock_guard lock(handle);
    task = runtime->every(1000, [&] {
      if (++runs == 3) {
        std::lock_guard inside(handle);
        task.cancel();  // from its own run: must not wait for itself
        third.set_value();
      }
    });
  }
  ASSERT_EQ(third.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  std::promise<void> later;
  ScheduledTask marker = runtime->after(5000, [&] { later.set_value(); });
  ASSERT_EQ(later.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(runs.load(), 3);
}

// An owner whose task is its last member, as the stores hold theirs.
struct TaskOwner {
  std::atomic<int>* destroyed;
  ScheduledTask task;
  ~TaskOwner() { ++*destroyed; }
};

TEST(SystemRuntime, ATaskMayDestroyTheObjectThatOwnsIt) {
  std::shared_ptr<Runtime> runtime = system_runtime();
  std::atomic<int> destroyed{0};
  std::promise<void> done;
  auto* owner = new TaskOwner{&destroyed, {}};
  std::mutex handle;
  {
    std::lock_guard lock(handle);
    owner->task = runtime->after(0, [&, owner] {
      {
        std::lock_guard inside(handle);
        delete owner;  // cancels its own task from inside its run
      }
      done.set_value();
    });
  }
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(destroyed.load(), 1);
}

}  // namespace
}  // namespace spillway
