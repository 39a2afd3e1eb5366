// HeldReplies (src/server/held_replies.h): answers held for their delay on a runtime, at most a
// capacity at once, each run exactly once: when due, or early by release_all().
#include "src/server/held_replies.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "spillway/runtime.h"

namespace spillway::server {
namespace {

TEST(HeldReplies, EachAnswerRunsWhenItsDelayHasPassedInTimeOrder) {
  ManualRuntime runtime;
  HeldReplies held(runtime, 10);
  std::vector<int> order;
  ASSERT_EQ(HeldReplies::Held::kHeld,
            held.hold(300, [&](bool early) { order.push_back(early ? -3 : 3); }));
  ASSERT_EQ(HeldReplies::Held::kHeld,
            held.hold(100, [&](bool early) { order.push_back(early ? -1 : 1); }));
  ASSERT_EQ(HeldReplies::Held::kHeld,
            held.hold(200, [&](bool early) { order.push_back(early ? -2 : 2); }));
  EXPECT_EQ(held.held(), 3u);
  runtime.advance(99);
  EXPECT_TRUE(order.empty());
  runtime.advance(1);
  EXPECT_EQ(order, (std::vector<int>{1}));
  runtime.advance(200);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(held.held(), 0u);
}

TEST(HeldReplies, OverCapacityTheAnswerIsNotKeptAndCapacityFollowsReloads) {
  ManualRuntime runtime;
  HeldReplies held(runtime, 2);
  int ran = 0;
  EXPECT_EQ(HeldReplies::Held::kHeld, held.hold(50, [&](bool) { ++ran; }));
  EXPECT_EQ(HeldReplies::Held::kHeld, held.hold(50, [&](bool) { ++ran; }));
  EXPECT_EQ(HeldReplies::Held::kFull,
            held.hold(50, [&](bool) { ran += 100; }));  // refused: not kept, never run
  held.set_capacity(3);
  EXPECT_EQ(HeldReplies::Held::kHeld, held.hold(50, [&](bool) { ++ran; }));
  runtime.advance(50);
  EXPECT_EQ(ran, 3);
  // Once they went, there is room again; capacity 0 holds nothing.
  EXPECT_EQ(HeldReplies::Held::kHeld, held.hold(10, [&](bool) { ++ran; }));
  held.set_capacity(0);
  EXPECT_EQ(HeldReplies::Held::kFull, held.hold(10, [&](bool) { ran += 100; }));
  runtime.advance(10);
  EXPECT_EQ(ran, 4);
}

TEST(HeldReplies, ReleaseAllRunsTheHeldOnesEarlyOnceAndRefusesLaterOnes) {
  ManualRuntime runtime;
  HeldReplies held(runtime, 10);
  int due = 0, early = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(HeldReplies::Held::kHeld,
              held.hold(1'000 * (i + 1), [&](bool e) { ++(e ? early : due); }));
  }
  runtime.advance(1'000);
  EXPECT_EQ(due, 1);
  EXPECT_EQ(held.release_all(), 3u);
  EXPECT_EQ(early, 3);
  runtime.advance(10'000);  // their schedules ended: nothing runs twice
  EXPECT_EQ(due, 1);
  EXPECT_EQ(early, 3);
  // After release_all, not kept: the caller answers at once.
  EXPECT_EQ(HeldReplies::Held::kReleased, held.hold(5'000, [&](bool e) { ++(e ? early : due); }));
  EXPECT_EQ(early, 3);
  EXPECT_EQ(held.held(), 0u);
}

TEST(HeldReplies, TheDestructorSendsWhatIsStillHeld) {
  ManualRuntime runtime;
  int early = 0;
  {
    HeldReplies held(runtime, 10);
    ASSERT_EQ(HeldReplies::Held::kHeld, held.hold(1'000'000, [&](bool e) { early += e; }));
  }
  EXPECT_EQ(early, 1);
  runtime.advance(2'000'000);
  EXPECT_EQ(early, 1);
}

// On the process's runtime, with holds, due runs and release_all() racing: every kept answer runs
// exactly once, and none after release_all() returned (run under TSan too).
TEST(HeldReplies, RacingHoldsDueRunsAndReleaseRunEachAnswerExactlyOnce) {
  auto runtime = system_runtime();
  std::atomic<int> kept{0}, ran{0}, twice{0}, after_release{0};
  std::atomic<bool> released{false};
  {
    HeldReplies held(*runtime, 1'000'000);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 500; ++i) {
          auto once = std::make_shared<std::atomic<bool>>(false);
          const auto result = held.hold((i * 7 + t) % 300, [&, once](bool) {
            if (once->exchange(true)) ++twice;
            if (released.load()) ++after_release;
            ++ran;
          });
          if (result == HeldReplies::Held::kHeld) ++kept;
        }
      });
    }
    std::thread releaser([&] {
      while (kept.load() < 300) std::this_thread::yield();
      held.release_all();
      released = true;
    });
    for (auto& thread : threads) thread.join();
    releaser.join();
  }
  EXPECT_GE(kept.load(), 300);
  EXPECT_EQ(ran.load(), kept.load());
  EXPECT_EQ(twice.load(), 0);
  EXPECT_EQ(after_release.load(), 0);
}

// release_all() returns only once an answer running on the runtime's thread has ended: what the
// answers use may be destroyed right after it (the Service's shutdown).
TEST(HeldReplies, ReleaseAllWaitsForAnAnswerRunningOnTheRuntime) {
  auto runtime = system_runtime();
  HeldReplies held(*runtime, 10);
  std::promise<void> started, go;
  std::shared_future<void> go_now = go.get_future().share();
  ASSERT_EQ(HeldReplies::Held::kHeld, held.hold(0, [&, go_now](bool early) {
    EXPECT_FALSE(early);
    started.set_value();
    go_now.wait();
  }));
  started.get_future().wait();
  auto release = std::async(std::launch::async, [&] { return held.release_all(); });
  // Whatever the machine's speed, it cannot have returned: the answer is still running.
  EXPECT_EQ(release.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  go.set_value();
  EXPECT_EQ(release.get(), 0u);  // the running one was due(): not released early
}

}  // namespace
}  // namespace spillway::server
