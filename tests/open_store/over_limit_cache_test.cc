// OverLimitCache over an in-process MemoryStore that shares its ManualClock: denials are answered
// locally (without a backend call) for costs at least the denied one, exactly until the moment
// the backend would admit again, and never longer; the LRU bound, clear_caches() and check_all.
// The property at the end runs a cached store and a plain one in lockstep and requires the same
// answer at every step, for every algorithm.
#include "spillway/over_limit_cache.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/clock.h"
#include "spillway/memory_store.h"

namespace spillway {
namespace {

constexpr Micros kCacheStart = 1'000 * kMicrosPerSecond;  // a whole second: a window start

// Counts the calls that reach the wrapped store.
class CountingStore final : public Store {
 public:
  explicit CountingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

  // Requests of one key count in `checks`, of several in `check_alls`.
  void decide(const StoreRequest& request, AllCallback done) override {
    ++(request.checks().size() == 1 ? checks : check_alls);
    inner_->decide(request, std::move(done));
  }
  void clear_caches() override { ++clears; }
  Store& inner() { return *inner_; }

  int calls() const { return checks.load() + check_alls.load(); }

  std::atomic<int> checks{0};
  std::atomic<int> check_alls{0};
  std::atomic<int> clears{0};

 private:
  std::unique_ptr<Store> inner_;
};

Limit cache_limit(Algorithm algorithm, std::int64_t limit, Micros period,
                  std::optional<std::int64_t> burst = std::nullopt) {
  Result<Limit> made = Limit::make(algorithm, limit, period, burst);
  EXPECT_TRUE(made.has_value()) << made.error().message;
  return *made;
}

// A cache over a counting wrapper over a MemoryStore, all on one ManualClock.
struct CacheFixture {
  explicit CacheFixture(std::size_t max_entries = 16)
      : clock(std::make_shared<ManualClock>(kCacheStart)) {
    auto memory = std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock});
    auto counting = std::make_unique<CountingStore>(std::move(memory));
    counter = counting.get();
    cache = std::make_unique<OverLimitCache>(std::move(counting), max_entries, clock);
  }

  Decision check(std::string_view key, const Limit& limit, std::int64_t cost = 1) {
    Result<Decision> d = cache->check(key, limit, cost);
    EXPECT_TRUE(d.has_value()) << d.error().message;
    return d ? *d : Decision{};
  }
  // What the backend holds for `key`, without going through the cache.
  Decision peek_inner(std::string_view key, const Limit& limit) {
    Result<Decision> d = counter->inner().check(key, limit, 0);
    EXPECT_TRUE(d.has_value());
    return d ? *d : Decision{};
  }

  std::shared_ptr<ManualClock> clock;
  CountingStore* counter = nullptr;
  std::unique_ptr<OverLimitCache> cache;
};

TEST(OverLimitCache, ASecondCheckOfADeniedKeyIsAnsweredLocally) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kFixedWindow, 2, kMicrosPerSecond);
  EXPECT_TRUE(f.check("olc-local", limit).allowed);
  EXPECT_TRUE(f.check("olc-local", limit).allowed);
  const Decision denied = f.check("olc-local", limit);
  EXPECT_FALSE(denied.allowed);
  EXPECT_FALSE(denied.local) << "the first denial comes from the backend";
  EXPECT_EQ(denied.retry_after, kMicrosPerSecond);
  EXPECT_EQ(f.counter->calls(), 3);
  EXPECT_EQ(f.cache->entries(), 1u);

  f.clock->advance(250'000);
  const Decision cached = f.check("olc-local", limit);
  EXPECT_FALSE(cached.allowed);
  EXPECT_TRUE(cached.local);
  EXPECT_EQ(cached.limit, 2);
  EXPECT_EQ(cached.remaining, 0);
  EXPECT_EQ(cached.retry_after, 750'000);
  EXPECT_EQ(f.counter->calls(), 3) << "a cached denial must not consult the backend";
  EXPECT_EQ(f.cache->hits(), 1u);

  std::string metrics;
  f.cache->append_metrics(metrics);
  EXPECT_NE(metrics.find("spillway_over_limit_cache_hits_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("spillway_over_limit_cache_entries 1\n"), std::string::npos) << metrics;
}

TEST(OverLimitCache, ADenialExpiresExactlyAtSentPlusRetryAfter) {
  for (Algorithm algorithm : kAlgorithms) {
    SCOPED_TRACE(std::string(algorithm_name(algorithm)));
    CacheFixture f;
    const Limit limit = cache_limit(algorithm, 1, kMicrosPerSecond);
    const std::string key = "olc-expiry-" + std::string(algorithm_name(algorithm));
    ASSERT_TRUE(f.check(key, limit).allowed);
    f.clock->advance(100'000);
    const Decision denied = f.check(key, limit);
    ASSERT_FALSE(denied.allowed);
    ASSERT_GT(denied.retry_after, 1);
    const int calls = f.counter->calls();

    f.clock->advance(denied.retry_after - 1);
    const Decision still = f.check(key, limit);
    EXPECT_FALSE(still.allowed);
    EXPECT_TRUE(still.local);
    EXPECT_EQ(still.retry_after, 1);
    EXPECT_EQ(f.counter->calls(), calls);
    // The backend agrees that one µs earlier it was still a denial.
    EXPECT_FALSE(f.counter->inner().check(key, limit, 1).value().allowed);
    const int calls_before_expiry = f.counter->calls();

    f.clock->advance(1);
    const Decision after = f.check(key, limit);
    EXPECT_TRUE(after.allowed) << "at sent + retry_after the backend admits again";
    EXPECT_FALSE(after.local);
    EXPECT_EQ(f.counter->calls(), calls_before_expiry + 1);
    EXPECT_EQ(f.cache->entries(), 0u) << "an expired denial is dropped";
  }
}

TEST(OverLimitCache, ACostBelowTheCachedCostGoesToTheStore) {
  CacheFixture f;
  // 4 tokens, one back every second.
  const Limit limit = cache_limit(Algorithm::kTokenBucket, 4, 4 * kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-cost", limit, 3).allowed);  // 1 left
  const Decision denied3 = f.check("olc-cost", limit, 3);
  ASSERT_FALSE(denied3.allowed);
  ASSERT_FALSE(denied3.local);
  EXPECT_EQ(f.counter->calls(), 2);

  // A larger cost is answered from the cache.
  const Decision denied4 = f.check("olc-cost", limit, 4);
  EXPECT_FALSE(denied4.allowed);
  EXPECT_TRUE(denied4.local);
  EXPECT_EQ(f.counter->calls(), 2);

  // A smaller one is the backend's to decide: 2 is denied there (and cached for >= 2)...
  const Decision two = f.check("olc-cost", limit, 2);
  EXPECT_FALSE(two.allowed);
  EXPECT_FALSE(two.local);
  EXPECT_EQ(f.counter->calls(), 3);
  EXPECT_TRUE(f.check("olc-cost", limit, 3).local);
  EXPECT_EQ(f.counter->calls(), 3);
  // ... and 1 is admitted: 1 token is still there.
  const Decision one = f.check("olc-cost", limit, 1);
  EXPECT_TRUE(one.allowed);
  EXPECT_FALSE(one.local);
  EXPECT_EQ(f.counter->calls(), 4);
  EXPECT_EQ(f.peek_inner("olc-cost", limit).remaining, 0);
}

TEST(OverLimitCache, PeeksAlwaysGoToTheStore) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kGcra, 1, kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-peek", limit).allowed);
  ASSERT_FALSE(f.check("olc-peek", limit).allowed);
  const int calls = f.counter->calls();
  Decision peek = f.check("olc-peek", limit, 0);
  EXPECT_FALSE(peek.local);
  EXPECT_EQ(f.counter->calls(), calls + 1);
}

TEST(OverLimitCache, ACostAboveTheLimitIsCachedUntilEvicted) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kSlidingLog, 2, kMicrosPerSecond);
  const Decision never = f.check("olc-never", limit, 3);
  ASSERT_FALSE(never.allowed);
  ASSERT_EQ(never.retry_after, kNever);
  f.clock->advance(1'000 * kMicrosPerSecond);
  const Decision cached = f.check("olc-never", limit, 3);
  EXPECT_FALSE(cached.allowed);
  EXPECT_TRUE(cached.local);
  EXPECT_EQ(cached.retry_after, kNever);
  EXPECT_EQ(f.counter->calls(), 1);
  EXPECT_TRUE(f.check("olc-never", limit, 2).allowed) << "a cost within the limit is not cached";
}

TEST(OverLimitCache, KeepsAtMostMaxEntriesLeastRecentlyUsedFirst) {
  CacheFixture f(2);
  const Limit limit = cache_limit(Algorithm::kFixedWindow, 1, 10 * kMicrosPerSecond);
  for (const char* key : {"olc-lru-a", "olc-lru-b", "olc-lru-c"}) {
    ASSERT_TRUE(f.check(key, limit).allowed);
    ASSERT_FALSE(f.check(key, limit).allowed);
  }
  EXPECT_EQ(f.cache->entries(), 2u);
  int calls = f.counter->calls();
  EXPECT_TRUE(f.check("olc-lru-c", limit).local);
  EXPECT_TRUE(f.check("olc-lru-b", limit).local);  // b is now the most recently used
  EXPECT_EQ(f.counter->calls(), calls);
  const Decision a = f.check("olc-lru-a", limit);  // evicted first: asks the store
  EXPECT_FALSE(a.allowed);
  EXPECT_FALSE(a.local);
  EXPECT_EQ(f.counter->calls(), calls + 1);
  EXPECT_EQ(f.cache->entries(), 2u);  // a is back, c (least recently used) is gone
  calls = f.counter->calls();
  EXPECT_TRUE(f.check("olc-lru-b", limit).local);
  EXPECT_FALSE(f.check("olc-lru-c", limit).local);
  EXPECT_EQ(f.counter->calls(), calls + 1);
}

TEST(OverLimitCache, NoEntriesCachesNothing) {
  CacheFixture f(0);
  const Limit limit = cache_limit(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-zero", limit).allowed);
  EXPECT_FALSE(f.check("olc-zero", limit).local);
  EXPECT_FALSE(f.check("olc-zero", limit).local);
  EXPECT_EQ(f.counter->calls(), 3);
  EXPECT_EQ(f.cache->entries(), 0u);
}

TEST(OverLimitCache, ClearCachesEmptiesItAndPassesItOn) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-clear", limit).allowed);
  ASSERT_FALSE(f.check("olc-clear", limit).allowed);
  ASSERT_EQ(f.cache->entries(), 1u);
  f.cache->clear_caches();
  EXPECT_EQ(f.cache->entries(), 0u);
  EXPECT_EQ(f.counter->clears.load(), 1);
  const int calls = f.counter->calls();
  EXPECT_FALSE(f.check("olc-clear", limit).local);
  EXPECT_EQ(f.counter->calls(), calls + 1);
}

TEST(OverLimitCache, SeparateLimitsOfOneKeyAreSeparateEntries) {
  CacheFixture f;
  const Limit one = cache_limit(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  const Limit two = cache_limit(Algorithm::kFixedWindow, 2, kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-limits", one).allowed);
  ASSERT_FALSE(f.check("olc-limits", one).allowed);
  const Decision other = f.check("olc-limits", two);
  EXPECT_TRUE(other.allowed) << "the denial under one limit says nothing of another";
  EXPECT_FALSE(other.local);
}

TEST(OverLimitCache, ALowerPrioritysDenialDoesNotDenyAHigherOne) {
  // One key, one state: 3 per second with 2 kept for higher priorities. The sheddable request
  // denied is remembered for its own view of the limit only.
  CacheFixture f;
  const Limit all = cache_limit(Algorithm::kFixedWindow, 3, kMicrosPerSecond);
  const Limit lower = *all.with_reserved(2);
  ASSERT_TRUE(f.check("olc-priority", lower).allowed);
  ASSERT_FALSE(f.check("olc-priority", lower).allowed);
  EXPECT_TRUE(f.check("olc-priority", lower).local) << "the lower priority's denial is cached";
  const Decision higher = f.check("olc-priority", all);
  EXPECT_TRUE(higher.allowed) << "the reserve is the higher priority's";
  EXPECT_FALSE(higher.local);
}

TEST(OverLimitCache, CheckAllWithACachedKeyDeniesWithoutACallAndChargesNothing) {
  CacheFixture f;
  const Limit tight = cache_limit(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  const Limit loose = cache_limit(Algorithm::kFixedWindow, 5, kMicrosPerSecond);
  ASSERT_TRUE(f.check("olc-all-x", tight).allowed);
  ASSERT_FALSE(f.check("olc-all-x", tight).allowed);
  const int calls = f.counter->calls();

  const std::array<KeyedLimit, 2> checks = {KeyedLimit{"olc-all-y", &loose},
                                            KeyedLimit{"olc-all-x", &tight}};
  Result<Decisions> decisions = f.cache->check_all(checks, 1);
  ASSERT_TRUE(decisions.has_value()) << decisions.error().message;
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_FALSE(all_allowed(*decisions));
  EXPECT_EQ(f.counter->calls(), calls) << "no backend call for a cached denial";
  EXPECT_TRUE((*decisions)[0].allowed);
  EXPECT_TRUE((*decisions)[0].local);
  EXPECT_EQ((*decisions)[0].remaining, 5);
  EXPECT_FALSE((*decisions)[1].allowed);
  EXPECT_TRUE((*decisions)[1].local);
  EXPECT_EQ(f.peek_inner("olc-all-y", loose).remaining, 5) << "y must not be charged";

  // Without a cached key, check_all goes to the store and remembers its denials.
  f.clock->advance(kMicrosPerSecond);  // next window: x admits again
  Result<Decisions> fresh = f.cache->check_all(checks, 1);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_TRUE(all_allowed(*fresh));
  EXPECT_EQ(f.counter->check_alls.load(), 1);
  Result<Decisions> denied = f.cache->check_all(checks, 1);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(all_allowed(*denied));
  EXPECT_FALSE((*denied)[1].local);
  EXPECT_EQ(f.counter->check_alls.load(), 2);
  EXPECT_TRUE(f.check("olc-all-x", tight).local) << "check_all's denial is cached";
}

TEST(OverLimitCache, AsyncChecksUseTheCacheToo) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kTokenBucket, 1, kMicrosPerSecond);
  std::optional<Result<Decision>> got;
  auto record = [&](Result<Decision> d) { got = std::move(d); };
  f.cache->check_async("olc-async", limit, 1, std::nullopt, record);
  ASSERT_TRUE(got && *got && (*got)->allowed);
  f.cache->check_async("olc-async", limit, 1, std::nullopt, record);
  ASSERT_TRUE(got && *got);
  EXPECT_FALSE((*got)->allowed);
  EXPECT_FALSE((*got)->local);
  f.cache->check_async("olc-async", limit, 1, std::nullopt, record);
  ASSERT_TRUE(got && *got);
  EXPECT_FALSE((*got)->allowed);
  EXPECT_TRUE((*got)->local);
  EXPECT_EQ(f.counter->calls(), 2);
}

TEST(OverLimitCache, InvalidInputIsRejectedBeforeTheCache) {
  CacheFixture f;
  const Limit limit = cache_limit(Algorithm::kFixedWindow, 1, kMicrosPerSecond);
  Result<Decision> empty_key = f.cache->check("", limit, 1);
  ASSERT_FALSE(empty_key.has_value());
  EXPECT_EQ(empty_key.error().code, Errc::kInvalidArgument);
  Result<Decision> negative = f.cache->check("olc-bad", limit, -1);
  ASSERT_FALSE(negative.has_value());
  EXPECT_EQ(negative.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(f.counter->calls(), 0);
}

// The cache is exact: a cached store and a plain store fed the same checks agree on every
// answer. A denial changes no state, so the plain store is a faithful reference even though the
// cached store's backend never sees the checks the cache answered. The steps include advancing
// the clock by exactly the last denial's retry_after, so a cache that kept a denial even 1 µs
// too long fails here.
void exactness_property(Algorithm algorithm) {
  const std::int64_t rate = *rc::gen::inRange<std::int64_t>(1, 5);
  const Micros period =
      *rc::gen::element<Micros>(Micros{kMicrosPerSecond}, Micros{2 * kMicrosPerSecond},
                                Micros{1'500'000}, Micros{3 * kMicrosPerSecond});
  std::optional<std::int64_t> burst;
  if (takes_burst(algorithm)) burst = *rc::gen::inRange<std::int64_t>(1, 6);
  Result<Limit> made = Limit::make(algorithm, rate, period, burst);
  RC_PRE(made.has_value());
  const Limit limit = *made;

  auto clock = std::make_shared<ManualClock>(kCacheStart + *rc::gen::inRange<Micros>(0, 3'000'000));
  OverLimitCache cached(std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock}),
                        *rc::gen::inRange<std::size_t>(1, 4), clock);
  MemoryStore reference(MemoryStoreOptions{.clock = clock});
  const std::array<std::string, 3> keys = {"p-a", "p-b", "p-c"};
  Micros last_retry = 0;
  int local_answers = 0;

  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    const int kind = *rc::gen::inRange(0, 10);
    if (kind == 8) {  // to the moment the last denial said the key would be admitted
      if (last_retry > 0) clock->advance(last_retry);
      continue;
    }
    if (kind == 9) {
      clock->advance(*rc::gen::inRange<Micros>(0, 2 * kMicrosPerSecond + 1));
      continue;
    }
    const std::int64_t cost = *rc::gen::inRange<std::int64_t>(0, 4);
    const std::size_t first = *rc::gen::inRange<std::size_t>(0, keys.size());
    if (kind >= 6) {  // all-or-nothing over two distinct keys
      const std::size_t second =
          (first + *rc::gen::inRange<std::size_t>(1, keys.size())) % keys.size();
      const std::array<KeyedLimit, 2> checks = {KeyedLimit{keys[first], &limit},
                                                KeyedLimit{keys[second], &limit}};
      Result<Decisions> got = cached.check_all(checks, cost);
      Result<Decisions> want = reference.check_all(checks, cost);
      RC_ASSERT(got.has_value());
      RC_ASSERT(want.has_value());
      RC_ASSERT(all_allowed(*got) == all_allowed(*want));
      for (std::size_t i = 0; i < 2; ++i) {
        if (!(*got)[i].local) RC_ASSERT((*got)[i] == (*want)[i]);
        if (!(*want)[i].allowed && (*want)[i].retry_after > 0) last_retry = (*want)[i].retry_after;
      }
    } else {
      Result<Decision> got = cached.check(keys[first], limit, cost);
      Result<Decision> want = reference.check(keys[first], limit, cost);
      RC_ASSERT(got.has_value());
      RC_ASSERT(want.has_value());
      RC_ASSERT(got->allowed == want->allowed);
      if (got->local) {
        ++local_answers;
        // The cache never claims a longer wait than the backend's (a cached denial for a
        // smaller cost may claim a shorter one: kNever is longer than any wait).
        if (got->retry_after == kNever) {
          RC_ASSERT(want->retry_after == kNever);
        } else if (want->retry_after != kNever) {
          RC_ASSERT(got->retry_after <= want->retry_after);
        }
      } else {
        RC_ASSERT(*got == *want);
      }
      if (!want->allowed && want->retry_after > 0) last_retry = want->retry_after;
    }
  }
  RC_CLASSIFY(local_answers > 0, "some answers came from the cache");
}

TEST(OverLimitCacheProperty, NeverDeniesWhatAPlainStoreAdmitsForEveryAlgorithm) {
  for (Algorithm algorithm : kAlgorithms) {
    const std::string name =
        "cache agrees with a plain store: " + std::string(algorithm_name(algorithm));
    EXPECT_TRUE(rc::check(name, [algorithm] { exactness_property(algorithm); })) << name;
  }
}

}  // namespace
}  // namespace spillway
