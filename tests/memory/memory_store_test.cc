// MemoryStore (include/spillway/memory_store.h): same decisions as the pure algorithms, exact
// under concurrency, input validation, key capacity, sweeping of idle keys.
#include "spillway/memory_store.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spillway/clock.h"
#include "spillway/limit.h"
#include "src/core/fixed_window.h"
#include "src/core/gcra.h"
#include "src/core/sliding_log.h"
#include "src/core/sliding_window.h"
#include "src/core/token_bucket.h"
#include "tests/core/state_testing.h"
#include "tests/support/poll.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using testing::pick_whole_range;

using test_util::AlgoTraits;
using test_util::limit_for;
using test_util::make_limit;
using test_util::show;

constexpr Micros kStoreSecond = kMicrosPerSecond;
constexpr Micros kHour = kMicrosPerHour;

constexpr auto& kAll = kAlgorithms;  // every algorithm of the list

MemoryStoreOptions manual_options(std::shared_ptr<ManualClock> clock, std::size_t shards = 64,
                                  std::size_t max_keys = 10'000'000) {
  MemoryStoreOptions o;
  o.shards = shards;
  o.max_keys = max_keys;
  o.clock = std::move(clock);
  return o;
}

// ------------------------------------------------------------------------------------------------
// Differential: one key in the store decides exactly like the pure function on its own state.
// ------------------------------------------------------------------------------------------------

template <typename State>
void store_matches_pure() {
  const std::int64_t limit = pick_whole_range<std::int64_t>(1, 51);
  const Micros period = pick_whole_range<Micros>(1, 10'000'001);
  const std::int64_t burst = pick_whole_range<std::int64_t>(1, 61);
  const Limit lim = limit_for<State>(limit, period, burst);
  const int n = *rc::gen::inRange(1, 151);
  const std::string key = *rc::gen::nonEmpty(rc::gen::container<std::string>(
      rc::gen::inRange<char>(std::numeric_limits<char>::min(), std::numeric_limits<char>::max())));
  RC_PRE(key.size() <= kMaxKeyBytes);

  struct Step {
    Micros now;
    std::int64_t cost;
    bool sweep_before;
  };
  std::vector<Step> steps;
  Micros t = pick_whole_range<Micros>(0, 1'000'000'000'000);
  for (int i = 0; i < n; ++i) {
    const int kind = pick_whole_range(0, 10);
    Micros dt = 0;
    if (kind < 3) {
      dt = 0;
    } else if (kind < 6) {
      dt = pick_whole_range<Micros>(1, period / limit + 2);
    } else if (kind < 9) {
      dt = pick_whole_range<Micros>(1, 2 * period + 2);
    } else {
      dt = -pick_whole_range<Micros>(1, period + 2);
    }
    t = std::max<Micros>(0, t + dt);
    const std::int64_t cost = pick_whole_range(0, 2) == 0
                                  ? 1
                                  : pick_whole_range<std::int64_t>(0, std::max(limit, burst) + 3);
    steps.push_back(Step{t, cost, pick_whole_range(0, 8) == 0});
  }
  // A sweep at time s may forget a key that is idle at s; that changes nothing for any later
  // request at or after s. So sweep only at the earliest time still to come.
  std::vector<Micros> earliest_to_come(steps.size());
  Micros low = std::numeric_limits<Micros>::max();
  for (std::size_t i = steps.size(); i-- > 0;) {
    low = std::min(low, steps[i].now);
    earliest_to_come[i] = low;
  }

  auto clock = std::make_shared<ManualClock>(0);
  MemoryStore store(manual_options(clock));
  State state{};
  std::string log = "limit " + lim.describe() + " P=" + std::to_string(period) + "; trace:";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    if (st.sweep_before) {
      store.sweep(earliest_to_come[i]);
      log += " sweep(" + std::to_string(earliest_to_come[i]) + ")";
    }
    log += " (" + std::to_string(st.now) + "," + std::to_string(st.cost) + ")";
    const Decision want = core::decide(state, lim, st.now, st.cost);
    // Alternate between an explicit now and the injected clock.
    Result<Decision> got;
    if (i % 2 == 0) {
      got = store.check(key, lim, st.cost, st.now);
    } else {
      clock->set(st.now);
      got = store.check(key, lim, st.cost);
    }
    if (!got.has_value()) RC_FAIL(log + "\nerror: " + got.error().message);
    if (!(*got == want)) RC_FAIL(log + "\nwant " + show(want) + "\ngot  " + show(*got));
    RC_ASSERT(store.size() <= 1u);
  }
}

RC_GTEST_PROP(MemoryStoreDifferential, FixedWindow, ()) {
  store_matches_pure<core::FixedWindowState>();
}
RC_GTEST_PROP(MemoryStoreDifferential, SlidingLog, ()) {
  store_matches_pure<core::SlidingLogState>();
}
RC_GTEST_PROP(MemoryStoreDifferential, SlidingWindow, ()) {
  store_matches_pure<core::SlidingWindowState>();
}
RC_GTEST_PROP(MemoryStoreDifferential, TokenBucket, ()) {
  store_matches_pure<core::TokenBucketState>();
}
RC_GTEST_PROP(MemoryStoreDifferential, Gcra, ()) { store_matches_pure<core::GcraState>(); }

// ------------------------------------------------------------------------------------------------
// Concurrency.
// ------------------------------------------------------------------------------------------------

TEST(MemoryStoreConcurrency, OneHotKeyAdmitsExactlyTheLimit) {
  // 8 threads x 5000 checks of cost 1 at one fixed `now`: exactly L = 10000 pass, whatever the
  // interleaving, for every algorithm (nothing refills at a fixed instant).
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  constexpr std::int64_t kLimit = 10'000;
  for (Algorithm a : kAll) {
    const Limit lim = make_limit(a, kLimit, kHour);
    MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
    std::atomic<int> admitted{0};
    std::atomic<int> errors{0};
    std::atomic<int> bad_remaining{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kPerThread; ++i) {
          const auto d = store.check("hot", lim, 1, 7 * kStoreSecond);
          if (!d) {
            errors.fetch_add(1);
          } else {
            if (d->allowed) admitted.fetch_add(1);
            if (d->remaining < 0 || d->remaining > kLimit) bad_remaining.fetch_add(1);
          }
        }
      });
    }
    // Meanwhile sweep at that same instant: the key is in use (not idle), so it must survive.
    std::atomic<bool> done{false};
    std::thread sweeper([&] {
      while (!done.load()) {
        store.sweep(7 * kStoreSecond);
        (void)store.size();
        std::this_thread::yield();
      }
    });
    for (auto& th : threads) th.join();
    done.store(true);
    sweeper.join();
    EXPECT_EQ(errors.load(), 0) << algorithm_name(a);
    EXPECT_EQ(bad_remaining.load(), 0) << algorithm_name(a);
    EXPECT_EQ(admitted.load(), kLimit) << algorithm_name(a);
    EXPECT_EQ(store.size(), 1u) << algorithm_name(a);
    const auto peek = store.check("hot", lim, 0, 7 * kStoreSecond);
    ASSERT_TRUE(peek.has_value());
    EXPECT_EQ(peek->remaining, 0) << algorithm_name(a);
  }
}

TEST(MemoryStoreConcurrency, ManyKeysEachAdmitExactlyTheLimit) {
  // 8 threads each walk 32 keys 20 times (160 attempts per key) at one instant; L = 50 per key.
  constexpr int kThreads = 8;
  constexpr int kKeys = 32;
  constexpr int kRounds = 20;
  constexpr std::int64_t kLimit = 50;
  for (Algorithm a : kAll) {
    const Limit lim = make_limit(a, kLimit, kHour);
    MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 8));
    std::vector<std::atomic<int>> admitted(kKeys);
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < kRounds; ++round) {
          for (int k = 0; k < kKeys; ++k) {
            const int key = (k + t * 5) % kKeys;  // threads start at different keys
            const auto d = store.check("user:" + std::to_string(key), lim, 1, 3 * kStoreSecond);
            if (!d) {
              errors.fetch_add(1);
            } else if (d->allowed) {
              admitted[static_cast<std::size_t>(key)].fetch_add(1);
            }
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(errors.load(), 0) << algorithm_name(a);
    for (int k = 0; k < kKeys; ++k) {
      EXPECT_EQ(admitted[static_cast<std::size_t>(k)].load(), kLimit)
          << algorithm_name(a) << " key " << k;
    }
    EXPECT_EQ(store.size(), static_cast<std::size_t>(kKeys)) << algorithm_name(a);
  }
}

// Destroys `store` on another thread and reports whether that finished within `limit`. A store
// whose destructor hangs is leaked instead, so a broken background sweeper fails this test
// rather than hanging the whole suite.
::testing::AssertionResult destroyed_within(std::unique_ptr<MemoryStore> store,
                                            std::chrono::seconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([s = store.release(), done] {
    delete s;
    done->set_value();
  }).detach();
  if (finished.wait_for(limit) == std::future_status::ready) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "~MemoryStore did not return within " << limit.count()
                                       << " s (the background sweeper does not stop)";
}

TEST(MemoryStore, DestructorStopsTheBackgroundSweeper) {
  // On the process's runtime: sweeps are running (one dropped the key the clock made idle), and
  // the destructor cancels the task and returns.
  auto clock = std::make_shared<ManualClock>(0);
  MemoryStoreOptions o = manual_options(clock);
  o.sweep_interval = std::chrono::milliseconds(1);
  auto store = std::make_unique<MemoryStore>(std::move(o));
  ASSERT_TRUE(store->check("k", make_limit(Algorithm::kGcra, 1, kStoreSecond)).value().allowed);
  clock->advance(kHour);
  ASSERT_TRUE(testing::wait_until([&] { return store->size() == 0; }, std::chrono::seconds(30)))
      << "no sweep ran";
  EXPECT_TRUE(destroyed_within(std::move(store), std::chrono::seconds(10)));
}

TEST(MemoryStore, SweepsRunOnTheInjectedRuntimeEveryIntervalAndEndWithTheStore) {
  auto clock = std::make_shared<ManualClock>(0);
  auto runtime = std::make_shared<ManualRuntime>();
  MemoryStoreOptions o = manual_options(clock);
  o.sweep_interval = std::chrono::milliseconds(1);
  o.runtime = runtime;
  auto store = std::make_unique<MemoryStore>(std::move(o));
  ASSERT_TRUE(store->check("k", make_limit(Algorithm::kGcra, 1, kStoreSecond)).value().allowed);
  EXPECT_EQ(runtime->advance(5'000), 5u) << "one sweep a millisecond";
  EXPECT_EQ(store->size(), 1u) << "the key is not idle at the store's clock";
  clock->advance(kHour);
  EXPECT_EQ(runtime->advance(1'000), 1u);
  EXPECT_EQ(store->size(), 0u) << "the sweep at the next millisecond dropped the idle key";
  store.reset();
  EXPECT_EQ(runtime->pending(), 0u) << "the destructor ended the sweep task";
  EXPECT_EQ(runtime->advance(5'000), 0u);
}

TEST(MemoryStoreConcurrency, BackgroundSweeperKeepsBusyKeysAndDropsIdleOnes) {
  // The background sweeper reads the injected clock. While the clock stands still at 7 s, keys
  // in use are not idle and each still admits exactly L; once the clock moves 2 h on, every key
  // is idle and the sweeper empties the store on its own.
  auto clock = std::make_shared<ManualClock>(7 * kStoreSecond);
  MemoryStoreOptions o = manual_options(clock, 8);
  o.sweep_interval = std::chrono::milliseconds(1);
  auto owned = std::make_unique<MemoryStore>(std::move(o));
  MemoryStore& store = *owned;
  constexpr int kThreads = 4;
  constexpr int kKeys = 16;
  constexpr std::int64_t kLimit = 40;
  std::vector<Limit> limits;
  for (Algorithm a : kAll) limits.push_back(make_limit(a, kLimit, kHour));
  std::vector<std::atomic<int>> admitted(kKeys * limits.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 15; ++round) {
        for (int k = 0; k < kKeys; ++k) {
          for (std::size_t a = 0; a < limits.size(); ++a) {
            const int key = (k + t * 3) % kKeys;
            const auto d = store.check("k" + std::to_string(key), limits[a]);  // clock: 7 s
            if (d && d->allowed) admitted[static_cast<std::size_t>(key) * limits.size() + a]++;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < admitted.size(); ++i) {
    EXPECT_EQ(admitted[i].load(), kLimit)
        << "key " << i / limits.size() << " " << limits[i % limits.size()].describe();
  }
  EXPECT_EQ(store.size(), kKeys * limits.size());
  clock->advance(2 * kHour);
  testing::wait_until([&] { return store.size() == 0; });
  EXPECT_EQ(store.size(), 0u);
  EXPECT_TRUE(destroyed_within(std::move(owned), std::chrono::seconds(10)));
}

// ------------------------------------------------------------------------------------------------
// Keys and limits.
// ------------------------------------------------------------------------------------------------

TEST(MemoryStore, DifferentLimitsOnOneKeyAreIndependent) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
  const Limit a = make_limit(Algorithm::kGcra, 5, kStoreSecond);
  const Limit b = make_limit(Algorithm::kGcra, 5, 2 * kStoreSecond);     // other period
  const Limit c = make_limit(Algorithm::kGcra, 6, kStoreSecond);         // other limit
  const Limit d = make_limit(Algorithm::kGcra, 5, kStoreSecond, 3);      // other burst
  const Limit e = make_limit(Algorithm::kFixedWindow, 5, kStoreSecond);  // other algorithm
  const Limit f = make_limit(Algorithm::kSlidingLog, 5, kStoreSecond);
  const Limit g = make_limit(Algorithm::kSlidingWindow, 5, kStoreSecond);
  const Limit h = make_limit(Algorithm::kTokenBucket, 5, kStoreSecond);
  const Micros now = 10 * kStoreSecond;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store.check("user", a, 1, now).value().allowed);
  EXPECT_FALSE(store.check("user", a, 1, now).value().allowed);
  struct Expect {
    const Limit* limit;
    int passes;
  };
  for (const Expect& x : {Expect{&b, 5}, Expect{&c, 6}, Expect{&d, 3}, Expect{&e, 5}, Expect{&f, 5},
                          Expect{&g, 5}, Expect{&h, 5}}) {
    int admitted = 0;
    for (int i = 0; i < 10; ++i) {
      const auto r = store.check("user", *x.limit, 1, now);
      ASSERT_TRUE(r.has_value()) << x.limit->describe();
      admitted += r->allowed ? 1 : 0;
    }
    EXPECT_EQ(admitted, x.passes) << x.limit->describe();
  }
}

TEST(MemoryStore, KeysAreComparedAsWholeByteStrings) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
  const Limit lim = make_limit(Algorithm::kFixedWindow, 1, kHour);
  const std::string keys[] = {
      "a", "a:b", "a:b:c",    "ab", std::string("a\0b", 3), std::string("a\0", 2),
      "A", "a ",  "\xff\xfe", "b:c"};
  for (const auto& k : keys) {
    const auto r = store.check(k, lim, 1, kStoreSecond);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->allowed) << "key of " << k.size() << " bytes collided";
  }
  for (const auto& k : keys) EXPECT_FALSE(store.check(k, lim, 1, kStoreSecond).value().allowed);
  EXPECT_EQ(store.size(), std::size(keys));
}

TEST(MemoryStore, RejectsInvalidInputAndChangesNothing) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
  const Limit lim = make_limit(Algorithm::kGcra, 5, kStoreSecond);
  const auto expect_invalid = [](const Result<Decision>& r, const char* what) {
    ASSERT_FALSE(r.has_value()) << what << " was accepted: " << show(*r);
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << what;
    EXPECT_FALSE(r.error().message.empty()) << what;
  };
  expect_invalid(store.check("", lim, 1, kStoreSecond), "empty key");
  expect_invalid(store.check(std::string(kMaxKeyBytes + 1, 'k'), lim, 1, kStoreSecond),
                 "1025-byte key");
  expect_invalid(store.check("k", lim, -1, kStoreSecond), "cost -1");
  expect_invalid(store.check("k", lim, std::numeric_limits<std::int64_t>::min(), kStoreSecond),
                 "cost INT64_MIN");
  expect_invalid(store.check("k", lim, 1, -1), "now -1");
  expect_invalid(store.check("k", lim, 1, kMaxNow + 1), "now past kMaxNow");
  EXPECT_EQ(store.size(), 0u);
  // The longest key is fine.
  const auto longest = store.check(std::string(kMaxKeyBytes, 'k'), lim, 1, kStoreSecond);
  ASSERT_TRUE(longest.has_value()) << longest.error().message;
  EXPECT_TRUE(longest->allowed);
  EXPECT_EQ(store.size(), 1u);
  // A huge cost is either rejected as input or denied for good; never admitted, never a crash.
  const auto huge = store.check("k", lim, std::numeric_limits<std::int64_t>::max(), kStoreSecond);
  if (huge.has_value()) {
    EXPECT_FALSE(huge->allowed);
    EXPECT_EQ(huge->retry_after, kNever);
  } else {
    EXPECT_EQ(huge.error().code, Errc::kInvalidArgument);
  }
  EXPECT_EQ(store.size(), 1u);
}

TEST(MemoryStore, PeekAndDeniedChecksDoNotCreateKeys) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
  for (Algorithm a : kAll) {
    const Limit lim = make_limit(a, 5, kStoreSecond);
    const auto peek = store.check("ghost", lim, 0, 3 * kStoreSecond);
    ASSERT_TRUE(peek.has_value());
    EXPECT_EQ(*peek, (Decision{true, 5, 5, 0, 0})) << algorithm_name(a);
    const auto never = store.check("ghost", lim, 6, 3 * kStoreSecond);  // 6 > L = B = 5
    ASSERT_TRUE(never.has_value());
    EXPECT_EQ(*never, (Decision{false, 5, 5, kNever, 0})) << algorithm_name(a);
    EXPECT_EQ(store.size(), 0u) << algorithm_name(a);
  }
}

TEST(MemoryStore, UsesTheInjectedClock) {
  auto clock = std::make_shared<ManualClock>(5 * kStoreSecond);
  MemoryStore store(manual_options(clock));
  const Limit lim = make_limit(Algorithm::kFixedWindow, 2, kStoreSecond);
  // Window 5 = [5 s, 6 s): reset 1 s from 5.0 s.
  EXPECT_EQ(store.check("k", lim).value(), (Decision{true, 2, 1, 0, kStoreSecond}));
  clock->advance(400'000);  // 5.4 s
  EXPECT_EQ(store.check("k", lim).value(), (Decision{true, 2, 0, 0, 600'000}));
  EXPECT_EQ(store.check("k", lim).value(), (Decision{false, 2, 0, 600'000, 600'000}));
  clock->set(6 * kStoreSecond);
  EXPECT_EQ(store.check("k", lim).value(), (Decision{true, 2, 1, 0, kStoreSecond}));
}

// ------------------------------------------------------------------------------------------------
// Capacity.
// ------------------------------------------------------------------------------------------------

TEST(MemoryStore, FullStoreRefusesNewKeysButStillLimitsTrackedOnes) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 1, 4));
  const Limit lim = make_limit(Algorithm::kGcra, 3, kHour);  // T = 20 min
  for (int k = 0; k < 4; ++k) {
    const auto r = store.check("k" + std::to_string(k), lim, 1, 0);
    ASSERT_TRUE(r.has_value()) << k << ": " << r.error().message;
    EXPECT_TRUE(r->allowed);
  }
  EXPECT_EQ(store.size(), 4u);
  const auto full = store.check("k4", lim, 1, 0);
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.error().code, Errc::kStoreFull);
  EXPECT_EQ(store.size(), 4u);
  // k0 holds 1 of 3: exactly 2 more pass, then it is denied, also while the store is full.
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    const auto r = store.check("k0", lim, 1, 1'000);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    admitted += r->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 2);
  EXPECT_FALSE(store.check("k5", lim, 1, 2'000).has_value());
  // Other algorithms count against the same cap.
  const auto other = store.check("k0", make_limit(Algorithm::kFixedWindow, 3, kHour), 1, 2'000);
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, Errc::kStoreFull);
  // Two hours later every key is idle (k0: tat = 3 * 20 min = 1 h): a new key sweeps them out.
  const auto later = store.check("k6", lim, 1, 2 * kHour);
  ASSERT_TRUE(later.has_value()) << later.error().message;
  EXPECT_TRUE(later->allowed);
  EXPECT_LE(store.size(), 4u);
}

TEST(MemoryStore, NeverTracksMoreThanMaxKeys) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 4, 16));
  const Limit lim = make_limit(Algorithm::kSlidingWindow, 2, kHour);
  std::vector<std::string> tracked;
  for (int k = 0; k < 100; ++k) {
    const std::string key = "key-" + std::to_string(k);
    const auto r = store.check(key, lim, 1, kStoreSecond);
    if (r.has_value()) {
      EXPECT_TRUE(r->allowed) << key;
      tracked.push_back(key);
    } else {
      EXPECT_EQ(r.error().code, Errc::kStoreFull) << key;
    }
    EXPECT_LE(store.size(), 16u);
  }
  EXPECT_LE(tracked.size(), 16u);
  EXPECT_FALSE(tracked.empty());
  EXPECT_EQ(store.size(), tracked.size());
  for (const auto& key : tracked) {
    const auto second = store.check(key, lim, 1, kStoreSecond);
    ASSERT_TRUE(second.has_value()) << key;
    EXPECT_TRUE(second->allowed) << key;
    const auto third = store.check(key, lim, 1, kStoreSecond);
    ASSERT_TRUE(third.has_value()) << key;
    EXPECT_FALSE(third->allowed) << key;  // L = 2 exactly
  }
}

// ------------------------------------------------------------------------------------------------
// Sweeping.
// ------------------------------------------------------------------------------------------------

TEST(MemoryStore, SweepDropsOnlyIdleKeys) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0)));
  // One unit at t = 0 with L = 10, P = 1 s: idle at 1 s (fixed window, sliding log), 2 s
  // (sliding window), T = 100,000 (buckets).
  for (Algorithm a : kAll) {
    ASSERT_TRUE(store.check("short", make_limit(a, 10, kStoreSecond), 1, 0).value().allowed);
  }
  // GCRA 10 per hour: idle only at T = 6 min.
  const Limit slow = make_limit(Algorithm::kGcra, 10, kHour);
  ASSERT_TRUE(store.check("long", slow, 1, 0).value().allowed);
  EXPECT_EQ(store.size(), 6u);
  EXPECT_EQ(store.sweep(50'000), 0u);  // nothing idle yet
  EXPECT_EQ(store.size(), 6u);
  EXPECT_EQ(store.sweep(3 * kStoreSecond), 5u);  // all "short" keys are idle at 3 s
  EXPECT_EQ(store.size(), 1u);
  // The kept key kept its state: 9 more pass at 3 s, the 11th does not.
  int admitted = 0;
  for (int i = 0; i < 12; ++i)
    admitted += store.check("long", slow, 1, 3 * kStoreSecond).value().allowed ? 1 : 0;
  EXPECT_EQ(admitted, 9);
  // 10 units, all while tat > now: tat = 10 * 6 min = 60 min; idle then, not before.
  EXPECT_EQ(store.sweep(60 * kMicrosPerMinute - 1), 0u);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.sweep(60 * kMicrosPerMinute), 1u);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.sweep(10 * kHour), 0u);
}

TEST(MemoryStore, AFullStoreFreesAKeyTheMicrosecondItIsIdle) {
  // One place, every algorithm: k1 holds it until its state is idle (1 per second: idle 1 s after
  // its admission, 2 s for the sliding window); k2 is refused 1 µs before and admitted at that
  // instant, because the sweep that makes room reads idleness from the state itself.
  for (Algorithm a : kAll) {
    MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 1, 1));
    const Limit lim = make_limit(a, 1, kStoreSecond);
    ASSERT_TRUE(store.check("k1", lim, 1, 0).value().allowed) << algorithm_name(a);
    const Micros idle = a == Algorithm::kSlidingWindow ? 2 * kStoreSecond : kStoreSecond;
    const auto early = store.check("k2", lim, 1, idle - 1);
    ASSERT_FALSE(early.has_value()) << algorithm_name(a);
    EXPECT_EQ(early.error().code, Errc::kStoreFull);
    const auto on_time = store.check("k2", lim, 1, idle);
    ASSERT_TRUE(on_time.has_value()) << algorithm_name(a) << ": " << on_time.error().message;
    EXPECT_TRUE(on_time->allowed);
    EXPECT_EQ(store.size(), 1u);
  }
}

TEST(MemoryStore, CheckAllAloneMakesRoomFromIdleKeys) {
  // Only layered checks, no background sweeper: a full store still frees the places of keys that
  // are idle (before, check_all never swept and refused every new key for good).
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 1, 2));
  const Limit lim = make_limit(Algorithm::kGcra, 1, kStoreSecond);
  const auto first = store.check_all(
      std::vector<KeyedLimit>{{.key = "a", .limit = &lim}, {.key = "b", .limit = &lim}}, 1, 0);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(store.size(), 2u);
  const std::vector<KeyedLimit> next{{.key = "c", .limit = &lim}, {.key = "d", .limit = &lim}};
  const auto early = store.check_all(next, 1, kStoreSecond - 1);  // a and b are not idle yet
  ASSERT_FALSE(early.has_value());
  EXPECT_EQ(early.error().code, Errc::kStoreFull);
  const auto later = store.check_all(next, 1, kStoreSecond);  // now they are
  ASSERT_TRUE(later.has_value()) << later.error().message;
  EXPECT_TRUE(all_allowed(*later));
  EXPECT_EQ(store.size(), 2u);
}

TEST(MemoryStore, SweepAfterTrafficReturnsToEmpty) {
  MemoryStore store(manual_options(std::make_shared<ManualClock>(0), 16));
  for (int k = 0; k < 200; ++k) {
    const Algorithm a = kAll[k % 5];
    const auto r =
        store.check("k" + std::to_string(k), make_limit(a, 3, kStoreSecond), 1 + k % 3, k * 1'000);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->allowed);
  }
  EXPECT_GT(store.size(), 0u);
  EXPECT_LE(store.size(), 200u);
  store.sweep(10 * kStoreSecond);
  EXPECT_EQ(store.size(), 0u);
  // A swept key starts over from idle.
  const auto fresh =
      store.check("k0", make_limit(Algorithm::kFixedWindow, 3, kStoreSecond), 0, 10 * kStoreSecond);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->remaining, 3);
}

}  // namespace
}  // namespace spillway

namespace spillway {
namespace {

// MemoryStore's own synchronous forms and the Store forms built on decide() (what a Store&
// caller gets) are one store's two doors: on the same random trace, with the same clock, two
// stores answer every check and every layered check the same, errors included.
RC_GTEST_PROP(MemoryStoreForms, InPlaceFormsAnswerAsDecideDoes, ()) {
  auto clock = std::make_shared<ManualClock>(1'000'000);
  MemoryStore direct({.clock = clock});
  MemoryStore through({.clock = clock});
  Store& as_store = through;
  const int steps = *rc::gen::inRange(1, 200);
  for (int i = 0; i < steps; ++i) {
    const Algorithm a = kAlgorithms[*rc::gen::inRange<std::size_t>(0, kAlgorithms.size())];
    const Limit limit = *Limit::make(a, *rc::gen::inRange(1, 6), kMicrosPerSecond);
    const Limit other = *Limit::make(a, *rc::gen::inRange(1, 6), 2 * kMicrosPerSecond);
    const std::string key = "k" + std::to_string(*rc::gen::inRange(0, 4));
    const std::int64_t cost = *rc::gen::inRange(-1, 4);  // -1: an input error, the same in both
    clock->advance(*rc::gen::inRange(0, 400'000));
    if (*rc::gen::arbitrary<bool>()) {
      const Result<Decision> a1 = direct.check(key, limit, cost);
      const Result<Decision> a2 = as_store.check(key, limit, cost);
      RC_ASSERT(a1.has_value() == a2.has_value());
      if (a1) RC_ASSERT(*a1 == *a2);
      if (!a1) RC_ASSERT(a1.error().message == a2.error().message);
    } else {
      const std::string second = *rc::gen::arbitrary<bool>() ? key : "k9";  // same key: an error
      const std::vector<KeyedLimit> layers = {{key, &limit}, {second, &limit}, {key, &other}};
      const Result<Decisions> b1 = direct.check_all(layers, cost);
      const Result<Decisions> b2 = as_store.check_all(layers, cost);
      RC_ASSERT(b1.has_value() == b2.has_value());
      if (b1) RC_ASSERT(*b1 == *b2);
      if (!b1) RC_ASSERT(b1.error().message == b2.error().message);
    }
  }
}

}  // namespace
}  // namespace spillway
