// The background sweeper of the memory store: it drops idle keys on its own, and a store with a
// sweeper is destroyed promptly (regression: the sweeper once spun forever after a stop request).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "spillway/memory_store.h"
#include "tests/support/poll.h"

namespace spillway {
namespace {

TEST(BackgroundSweep, DropsIdleKeysWithoutTrafficAndStopsPromptly) {
  auto clock = std::make_shared<ManualClock>(1'000'000);
  auto done = std::async(std::launch::async, [clock] {
    MemoryStore store({.clock = clock, .sweep_interval = std::chrono::milliseconds(5)});
    const Limit limit = *Limit::make(Algorithm::kGcra, 10, kMicrosPerSecond);
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(store.check("k" + std::to_string(i), limit));
    EXPECT_EQ(store.size(), 100u);
    clock->advance(kMicrosPerSecond);  // every key is idle from now on
    testing::wait_until([&] { return store.size() == 0; });
    EXPECT_EQ(store.size(), 0u) << "the background sweeper did not drop idle keys";
  });  // ~MemoryStore stops and joins the sweeper here
  ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the store with a background sweeper did not shut down";
}

}  // namespace
}  // namespace spillway
