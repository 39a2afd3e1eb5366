// Operation::kCharge on the memory store: usage reported after the work ran, each key charged its
// cost without a check. For every algorithm: a charge above the limit is admitted and leaves the
// key in debt, which a later check waits out to the microsecond; the debt stops one limit past
// empty (core::kDebtLimits, as each algorithm's settle() stops a settlement's), so a key charged
// ten limits waits exactly as long as one charged the bound; a charge of 0 changes nothing; each
// decision is the key's state after the charge (a peek), allowed. The keys of one charge are each
// charged, whatever the others owe (nothing is refused, so it is not all-or-nothing); bad input is
// refused by StoreRequest::make; the over-limit cache passes a charge on to the store even for a
// key whose denial it remembers.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/clock.h"
#include "spillway/memory_store.h"
#include "spillway/over_limit_cache.h"
#include "src/core/charge_mark.h"

namespace spillway {
namespace {

constexpr Micros kPeriod = kMicrosPerMinute;
constexpr std::int64_t kChargeLimit = 4;  // per minute: T = 15 s
constexpr std::int64_t kBurst = 6;        // token_bucket's and gcra's, other than the limit
constexpr Micros kInterval = kPeriod / kChargeLimit;
constexpr Micros kWindowStart = 1'000'000 * kPeriod;           // every algorithm's window starts
constexpr Micros kNow = kWindowStart + 10 * kMicrosPerSecond;  // 10 s into that window

Limit limit_of(Algorithm algorithm) {
  const std::optional<std::int64_t> burst =
      takes_burst(algorithm) ? std::optional<std::int64_t>(kBurst) : std::nullopt;
  return *Limit::make(algorithm, kChargeLimit, kPeriod, burst);
}

// What a key may owe at most: one limit past empty, in the units a check takes at most at once
// (burst() is the limit for the window algorithms).
std::int64_t debt_bound(const Limit& limit) { return (1 + core::kDebtLimits) * limit.burst(); }

std::string show_charge(const Decision& d) {
  return std::string(d.allowed ? "allowed" : "denied") +
         " remaining=" + std::to_string(d.remaining) +
         " retry_after=" + std::to_string(d.retry_after) +
         " reset_after=" + std::to_string(d.reset_after) + (d.local ? " local" : "");
}

// A kCharge of `keys` (each its own cost, or `cost`) at `now`; the store's decisions.
Decisions charge(Store& store, std::span<const KeyedLimit> keys, std::int64_t cost, Micros now) {
  const Result<StoreRequest> request = StoreRequest::make(keys, cost, now, Operation::kCharge);
  EXPECT_TRUE(request.has_value()) << (request ? "" : request.error().message);
  if (!request) return {};
  Result<Decisions> decisions = store.decide_and_wait(*request);
  EXPECT_TRUE(decisions.has_value()) << (decisions ? "" : decisions.error().message);
  if (!decisions) return {};
  EXPECT_EQ(decisions->size(), keys.size());
  return *decisions;
}

Decision charge_one(Store& store, std::string_view key, const Limit& limit, std::int64_t cost,
                    Micros now) {
  const KeyedLimit keys[] = {{key, &limit}};
  const Decisions decisions = charge(store, keys, cost, now);
  return decisions.empty() ? Decision{} : decisions.front();
}

Decision check(Store& store, std::string_view key, const Limit& limit, std::int64_t cost,
               Micros now) {
  const Result<Decision> decision = store.check(key, limit, cost, now);
  EXPECT_TRUE(decision.has_value()) << (decision ? "" : decision.error().message);
  return decision ? *decision : Decision{};
}

// What a charge reports: the key as a peek sees it, marked allowed (charged).
Decision as_charged(Decision peek) {
  peek.allowed = true;
  return peek;
}

// A check of 1 on `key` at `at` is denied with a wait above 0; 1 µs before the wait is over it
// is still denied, and when it is over, admitted. Returns the wait (0 on a failure).
Micros expect_waits_exactly(Store& store, std::string_view key, const Limit& limit, Micros at) {
  const Decision denied = check(store, key, limit, 1, at);
  EXPECT_FALSE(denied.allowed) << show_charge(denied);
  EXPECT_GT(denied.retry_after, 0) << show_charge(denied);
  if (denied.allowed || denied.retry_after <= 0) return 0;
  const Decision early = check(store, key, limit, 1, at + denied.retry_after - 1);
  EXPECT_FALSE(early.allowed) << "1 µs before retry_after: " << show_charge(early);
  const Decision on_time = check(store, key, limit, 1, at + denied.retry_after);
  EXPECT_TRUE(on_time.allowed) << "at retry_after: " << show_charge(on_time);
  return denied.retry_after;
}

// How long a key charged to the debt bound at kNow waits for a check of 1, from each algorithm's
// settle() (where the charge stops) and decide() (when 1 fits again).
Micros wait_at_the_bound(const Limit& limit) {
  const std::int64_t bound = debt_bound(limit);
  switch (limit.algorithm()) {
    case Algorithm::kFixedWindow:  // the next window forgets the debt
      return kWindowStart + kPeriod - kNow;
    case Algorithm::kSlidingLog:  // one entry, gone from the log a period after it
      return kPeriod;
    case Algorithm::kSlidingWindow:
      // The next window counts this one's `bound` for the part of it still in view: 1 fits at
      // the r into it with bound * (P - r) <= (L - 1) * P.
      return kWindowStart + 2 * kPeriod - (kChargeLimit - 1) * kPeriod / bound - kNow;
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra:
      // From `bound` intervals owed down to burst - 1, one interval T at a time.
      return (bound - (limit.burst() - 1)) * kInterval;
  }
  return 0;
}

class MemoryCharge : public ::testing::TestWithParam<Algorithm> {};

TEST_P(MemoryCharge, AChargeAboveTheLimitIsAdmittedAndLeavesTheKeyInDebt) {
  MemoryStore store;
  const Limit limit = limit_of(GetParam());
  const std::int64_t cost = limit.burst() + 1;  // more than a check could ever admit
  const Decision refused = check(store, "checked", limit, cost, kNow);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after, kNever) << "as a check: never";

  const Decision charged = charge_one(store, "k", limit, cost, kNow);
  EXPECT_TRUE(charged.allowed) << show_charge(charged);
  EXPECT_EQ(charged.limit, kChargeLimit);
  EXPECT_EQ(charged.remaining, 0) << "a key in debt has none";
  EXPECT_GT(charged.reset_after, 0);
  const Decision peek = check(store, "k", limit, 0, kNow);
  EXPECT_FALSE(peek.allowed) << "in debt, even a peek is denied: " << show_charge(peek);
  EXPECT_EQ(charged, as_charged(peek)) << "the charge reports the key as it stands after it";

  const Micros wait = expect_waits_exactly(store, "k", limit, kNow);
  // A key checked to full waits less, or as long (the windows: until the same window ends).
  for (std::int64_t i = 0; i < limit.burst(); ++i) {
    ASSERT_TRUE(check(store, "full", limit, 1, kNow).allowed) << i;
  }
  EXPECT_LE(check(store, "full", limit, 1, kNow).retry_after, wait);
}

TEST_P(MemoryCharge, TheDebtStopsOneLimitPastEmpty) {
  MemoryStore store;
  const Limit limit = limit_of(GetParam());
  const std::int64_t bound = debt_bound(limit);
  ASSERT_LT(bound, 10 * kChargeLimit);
  const Decision ten = charge_one(store, "ten", limit, 10 * kChargeLimit, kNow);
  const Decision at_bound = charge_one(store, "bound", limit, bound, kNow);
  EXPECT_TRUE(ten.allowed);
  EXPECT_EQ(ten, at_bound) << "ten limits leave what the bound leaves: " << show_charge(ten)
                           << " vs " << show_charge(at_bound);
  // More on a key at the bound changes nothing; a key short of it is charged up to it.
  EXPECT_EQ(charge_one(store, "bound", limit, 5, kNow), at_bound);
  ASSERT_TRUE(charge_one(store, "steps", limit, bound - 1, kNow).allowed);
  EXPECT_EQ(charge_one(store, "steps", limit, 5, kNow), at_bound);

  // The wait the bound leaves, exactly, on each of the three keys.
  for (const char* key : {"ten", "bound", "steps"}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(expect_waits_exactly(store, key, limit, kNow), wait_at_the_bound(limit));
  }
  // At most one limit's worth longer than a key checked to full: burst x T (a period, for the
  // windows); the buckets wait exactly that much longer.
  for (std::int64_t i = 0; i < limit.burst(); ++i) {
    ASSERT_TRUE(check(store, "full", limit, 1, kNow).allowed) << i;
  }
  const Micros full_wait = check(store, "full", limit, 1, kNow).retry_after;
  EXPECT_LE(wait_at_the_bound(limit), full_wait + limit.burst() * kInterval);
  if (takes_burst(GetParam())) {
    EXPECT_EQ(wait_at_the_bound(limit), full_wait + limit.burst() * kInterval);
  }
  EXPECT_LE(wait_at_the_bound(limit), 2 * kPeriod) << "with these limits (burst + 1 <= 2 x limit)";
  if (GetParam() == Algorithm::kFixedWindow) {
    // Whatever was charged, the next window starts from nothing.
    const Decision next = check(store, "ten", limit, 1, kWindowStart + kPeriod + 1);
    EXPECT_TRUE(next.allowed);
    EXPECT_EQ(next.remaining, kChargeLimit - 2) << "the check at the window's start, and this one";
  }
}

TEST_P(MemoryCharge, ACostOfZeroChangesNothing) {
  MemoryStore store;
  const Limit limit = limit_of(GetParam());
  // A fresh key: reported as it stands, and not tracked.
  const Decision fresh = charge_one(store, "fresh", limit, 0, kNow);
  EXPECT_EQ(fresh, as_charged(check(store, "fresh", limit, 0, kNow)));
  EXPECT_EQ(fresh.remaining, limit.burst());
  EXPECT_EQ(store.size(), 0u) << "a charge of 0 took a place";

  // A key partly used, and its twin: the same answers afterwards.
  for (const char* key : {"used", "twin"}) {
    ASSERT_TRUE(check(store, key, limit, 2, kNow).allowed);
  }
  const Micros later = kNow + kMicrosPerSecond;
  EXPECT_EQ(charge_one(store, "used", limit, 0, later),
            as_charged(check(store, "twin", limit, 0, later)));
  // A key in debt: the same wait as before.
  ASSERT_TRUE(charge_one(store, "owing", limit, debt_bound(limit), kNow).allowed);
  const Decision owing = check(store, "owing", limit, 1, later);
  EXPECT_EQ(charge_one(store, "owing", limit, 0, later),
            as_charged(check(store, "owing", limit, 0, later)));
  EXPECT_EQ(check(store, "owing", limit, 1, later), owing);

  for (Micros at = later; at <= later + 3 * kPeriod; at += kInterval / 3) {
    SCOPED_TRACE(at - later);
    EXPECT_EQ(check(store, "used", limit, 1, at), check(store, "twin", limit, 1, at));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, MemoryCharge, ::testing::ValuesIn(kAlgorithms),
                         [](const auto& p) { return std::string(algorithm_name(p.param)); });

TEST(MemoryChargeKeys, EachKeyIsChargedItsCostWhateverTheOthersOwe) {
  MemoryStore store;
  const Limit requests = *Limit::make(Algorithm::kFixedWindow, 10, kPeriod);
  const Limit tokens = *Limit::make(Algorithm::kSlidingLog, 100, kPeriod);
  ASSERT_TRUE(charge_one(store, "owing", requests, 25, kNow).allowed);
  const KeyedLimit keys[] = {
      {"owing", &requests}, {"requests", &requests}, {"tokens", &tokens, 70}};
  // As a check, the key in debt denies all three, and none is charged.
  const Result<Decisions> checked = store.check_all(keys, 2, kNow);
  ASSERT_TRUE(checked.has_value());
  EXPECT_FALSE(all_allowed(*checked));
  EXPECT_EQ(check(store, "requests", requests, 0, kNow).remaining, 10);

  const Decisions charged = charge(store, keys, 2, kNow);
  ASSERT_EQ(charged.size(), 3u);
  EXPECT_TRUE(all_allowed(charged)) << show_charge(charged[0]) << "; " << show_charge(charged[1])
                                    << "; " << show_charge(charged[2]);
  EXPECT_EQ(charged[0].remaining, 0);
  EXPECT_EQ(charged[1].remaining, 8) << "the request's cost";
  EXPECT_EQ(charged[2].remaining, 30) << "its own cost";
  EXPECT_EQ(check(store, "requests", requests, 0, kNow).remaining, 8);
  EXPECT_EQ(check(store, "tokens", tokens, 0, kNow).remaining, 30);
  // The key charged 25 owes its bound of 20 (two windows' worth): 2 more leave it as it was.
  EXPECT_EQ(charged[0], as_charged(check(store, "owing", requests, 0, kNow)));
  const Decision owing = check(store, "owing", requests, 1, kNow);
  EXPECT_FALSE(owing.allowed);
  EXPECT_EQ(owing.retry_after, kWindowStart + kPeriod - kNow);
}

TEST(MemoryChargeKeys, BadInputIsRefusedByMake) {
  const Limit limit = limit_of(Algorithm::kGcra);
  const std::string long_key(kMaxKeyBytes + 1, 'k');
  const KeyedLimit one[] = {{"k", &limit}};
  const KeyedLimit empty_key[] = {{"", &limit}};
  const KeyedLimit too_long[] = {{long_key, &limit}};
  const KeyedLimit negative_own[] = {{"k", &limit, -2}};
  const KeyedLimit twice[] = {{"k", &limit}, {"k", &limit}};
  struct Case {
    const char* name;
    std::span<const KeyedLimit> keys;
    std::int64_t cost;
    Micros now;
  };
  const Case cases[] = {
      {"a negative cost", one, -1, kNow},
      {"a negative cost of its own", negative_own, 1, kNow},
      {"an empty key", empty_key, 1, kNow},
      {"a key over kMaxKeyBytes", too_long, 1, kNow},
      {"no key", {}, 1, kNow},
      {"the same key twice", twice, 1, kNow},
      {"now below 0", one, 1, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<StoreRequest> request =
        StoreRequest::make(c.keys, c.cost, c.now, Operation::kCharge);
    ASSERT_FALSE(request.has_value());
    EXPECT_EQ(request.error().code, Errc::kInvalidArgument);
    EXPECT_FALSE(request.error().message.empty());
  }
  const Result<StoreRequest> valid = StoreRequest::make(one, 0, kNow, Operation::kCharge);
  ASSERT_TRUE(valid.has_value());
  EXPECT_EQ(valid->operation(), Operation::kCharge);
}

TEST(OverLimitCacheCharge, AChargeOfAKeyWhoseDenialIsCachedReachesTheStore) {
  auto clock = std::make_shared<ManualClock>(kNow);
  OverLimitCache cache(std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock}), 100,
                       clock);
  const Limit limit = *Limit::make(Algorithm::kGcra, 2, kPeriod);  // T = 30 s, burst 2
  constexpr Micros kHalfPeriod = kPeriod / 2;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(check(cache, "k", limit, 1, kNow).allowed) << i;
  const Decision denied = check(cache, "k", limit, 1, kNow);
  ASSERT_FALSE(denied.allowed);
  ASSERT_FALSE(denied.local);
  ASSERT_EQ(denied.retry_after, kHalfPeriod);
  ASSERT_EQ(cache.entries(), 1u);
  ASSERT_TRUE(check(cache, "k", limit, 1, kNow).local) << "the denial is remembered";
  const std::uint64_t hits = cache.hits();

  const Decision charged = charge_one(cache, "k", limit, 1, kNow);
  EXPECT_TRUE(charged.allowed) << show_charge(charged);
  EXPECT_FALSE(charged.local) << "a charge is never answered by the cache";
  EXPECT_EQ(cache.hits(), hits);
  // The store owes one interval more: the wait for 1 is T longer.
  const Decision inner = check(cache.inner(), "k", limit, 1, kNow);
  EXPECT_FALSE(inner.allowed);
  EXPECT_EQ(inner.retry_after, 2 * kHalfPeriod) << show_charge(inner);
  EXPECT_EQ(charged, as_charged(check(cache.inner(), "k", limit, 0, kNow)));
  // Once the remembered denial is over, the cache asks the store, which still has the debt.
  const Decision after = check(cache, "k", limit, 1, kNow + kHalfPeriod);
  EXPECT_FALSE(after.allowed) << show_charge(after);
  EXPECT_FALSE(after.local);
  EXPECT_EQ(after.retry_after, kHalfPeriod);
  EXPECT_TRUE(check(cache, "k", limit, 1, kNow + 2 * kHalfPeriod).allowed);
}

}  // namespace
}  // namespace spillway
