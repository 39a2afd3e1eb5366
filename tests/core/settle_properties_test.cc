// Property tests of settle() (usage-based limits, docs/SPEC.md §2.6), every algorithm.
//
// A random history on one key: checks, reservations (an estimate charged by decide(), the mark
// taken right after), settlements of open reservations with an actual cost drawn at random (below,
// equal to or above the estimate, 0 for a cancel), reservations left to expire, time moving
// forward (sometimes back). Next to the key, a model replays the same admitted operations as if
// every reservation had been charged its actual cost from the start: min(actual, estimate) at the
// reservation, the rest (actual above the estimate) when it is settled, as the key itself must;
// a reservation that never settles is charged its estimate. The model is the algorithm's own
// unchecked charge (settle with delta > 0), so it shares no refund code with what it checks.
//
// Properties:
//   a. never over-credit: after every step, the largest cost the key admits now is at most the
//      largest cost the model admits now;
//   b. exact when alone: a reservation settled before anything else touched its key leaves the
//      key exactly as the model (a key charged the actual cost at the reservation's time),
//      while the charge still counts (same window; a live log entry; any time for the buckets,
//      whose refund is then what refilling has not already given back);
//   c. debt: an actual cost above the estimate is charged without a check, and the key then
//      denies what the model denies;
//   d. buckets, busy: a reservation settled after other charges, while the model never went
//      idle in between, leaves the key exactly as the model (the whole unused part given back).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/charge_mark.h"
#include "tests/core/state_testing.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using testing::pick_whole_range;

using test_util::AlgoTraits;
using test_util::limit_for;
using test_util::max_cost;
using test_util::show_state;

template <typename State>
class Settle : public ::testing::Test {};
TYPED_TEST_SUITE(Settle, test_util::AllStateTypes, test_util::AlgorithmNames);

// The largest cost `state` admits at `now` (admission is monotone in the cost).
template <typename State>
std::int64_t room(const State& state, const Limit& limit, Micros now) {
  std::int64_t lo = 0;
  std::int64_t hi = max_cost<State>(limit);
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    State copy = state;
    if (core::decide(copy, limit, now, mid).allowed) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// An unchecked charge: the model's only way to change.
template <typename State>
void charge(State& state, const Limit& limit, Micros now, std::int64_t cost) {
  if (cost > 0) core::settle(state, limit, now, cost, core::ChargeMark{});
}

template <typename State>
Limit gen_limit() {
  const std::int64_t l = pick_whole_range<std::int64_t>(1, 41);
  Micros period = 0;
  switch (pick_whole_range(0, 3)) {
    case 0:
      period = pick_whole_range<Micros>(1, 100);
      break;
    case 1:
      period = l * pick_whole_range<Micros>(1, 10'001);
      break;
    default:
      period = pick_whole_range<Micros>(1, 10'000'001);
      break;
  }
  return limit_for<State>(l, period, pick_whole_range<std::int64_t>(1, 41));
}

struct Open {
  std::int64_t estimate;
  std::int64_t actual;
  core::ChargeMark mark;
};

TYPED_TEST(Settle, NeverCreditsMoreThanTheActualCostsWould) {
  using State = TypeParam;
  const bool ok = rc::check([] {
    const Limit limit = gen_limit<State>();
    const std::int64_t top = max_cost<State>(limit);
    const Micros tee = std::max<Micros>(1, limit.period() / limit.limit());
    State key{};
    State model{};
    std::vector<Open> open;
    std::string log = "limit " + limit.describe() + ":";
    Micros now = pick_whole_range<Micros>(0, 1'000'000'000);
    Micros seen = now;
    const int steps = *rc::gen::inRange(1, 120);
    for (int step = 0; step < steps; ++step) {
      const int kind = pick_whole_range(0, 100);
      if (kind < 25) {
        now += pick_whole_range<Micros>(0, 2 * tee + 2);
      } else if (kind < 32) {
        now += pick_whole_range<Micros>(0, 2 * limit.period() + 2);
      } else if (kind < 35) {
        now = std::max<Micros>(0, now - pick_whole_range<Micros>(0, limit.period() + 1));
      } else if (kind < 50) {  // a plain check
        const std::int64_t cost = pick_whole_range<std::int64_t>(0, top + 1);
        log += " check(" + std::to_string(now) + "," + std::to_string(cost) + ")";
        if (core::decide(key, limit, now, cost).allowed) charge(model, limit, now, cost);
      } else if (kind < 78) {  // a reservation; its actual cost is known to the model in advance
        const std::int64_t estimate = pick_whole_range<std::int64_t>(1, top + 1);
        const int fate = pick_whole_range(0, 10);
        const std::int64_t actual =
            fate == 0 ? 0
                      : (fate < 7 ? pick_whole_range<std::int64_t>(0, estimate + 1)
                                  : estimate + pick_whole_range<std::int64_t>(0, top + 1));
        const bool expires = pick_whole_range(0, 8) == 0;
        log += " reserve(" + std::to_string(now) + "," + std::to_string(estimate) + "->" +
               (expires ? std::string("expires") : std::to_string(actual)) + ")";
        if (core::decide(key, limit, now, estimate).allowed) {
          if (expires) {
            charge(model, limit, now, estimate);
          } else {
            charge(model, limit, now, std::min(actual, estimate));
            open.push_back({estimate, actual, core::mark(key, limit)});
          }
        }
      } else if (!open.empty()) {  // settle one open reservation
        const std::size_t i =
            static_cast<std::size_t>(pick_whole_range<int>(0, static_cast<int>(open.size())));
        const Open r = open[i];
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
        log += " settle(" + std::to_string(now) + "," + std::to_string(r.estimate) + "->" +
               std::to_string(r.actual) + ")";
        const std::int64_t done = core::settle(key, limit, now, r.actual - r.estimate, r.mark);
        // A debt stops one limit past empty (kDebtLimits): what the key did not charge, the
        // model does not either, so that this compares refunds alone.
        if (r.actual > r.estimate) charge(model, limit, now, done);
      }
      // Compared at the latest time either has seen: a `now` that went back is decided at the
      // state's own latest time (docs/SPEC.md §2), and the key has seen charges the model has
      // not (a reservation whose actual cost is 0), so at an earlier `now` the two would be
      // asked about different instants.
      seen = std::max(seen, now);
      const std::int64_t key_room = room(key, limit, seen);
      const std::int64_t model_room = room(model, limit, seen);
      if (key_room > model_room) {
        RC_FAIL(log + "\nkey admits " + std::to_string(key_room) + ", model " +
                std::to_string(model_room) + " at " + std::to_string(seen) + "\nkey " +
                show_state(key) + "\nmodel " + show_state(model));
      }
    }
  });
  EXPECT_TRUE(ok);
}

// Whether a charge at `charged` still counts at `now` for the window algorithms (the buckets: it
// always does).
template <typename State>
bool still_counts(const Limit& limit, Micros charged, Micros now) {
  const Micros p = limit.period();
  switch (AlgoTraits<State>::kAlgorithm) {
    case Algorithm::kFixedWindow:
      return charged / p == now / p;
    case Algorithm::kSlidingLog:
      return charged > now - p;
    case Algorithm::kSlidingWindow:
      return now / p - charged / p <= 1;
    default:
      return true;
  }
}

TYPED_TEST(Settle, AReservationSettledAloneLeavesTheKeyAsTheActualCostWould) {
  using State = TypeParam;
  const bool ok = rc::check([] {
    const Limit limit = gen_limit<State>();
    const std::int64_t top = max_cost<State>(limit);
    // A history first, so that the key is not always fresh.
    State key{};
    Micros now = pick_whole_range<Micros>(0, 1'000'000'000);
    for (int i = pick_whole_range(0, 6); i > 0; --i) {
      now += pick_whole_range<Micros>(0, limit.period() + 1);
      core::decide(key, limit, now, pick_whole_range<std::int64_t>(0, top + 1));
    }
    const std::int64_t estimate = pick_whole_range<std::int64_t>(1, top + 1);
    const std::int64_t actual = pick_whole_range<std::int64_t>(0, estimate + 1);
    State model = key;
    if (!core::decide(key, limit, now, estimate).allowed) return;
    const core::ChargeMark mark = core::mark(key, limit);
    charge(model, limit, now, actual);
    const Micros later = now + pick_whole_range<Micros>(0, 2 * limit.period() + 2);
    const std::int64_t back = core::settle(key, limit, later, actual - estimate, mark);
    RC_ASSERT(back <= estimate - actual);
    if (!still_counts<State>(limit, mark.at, later)) return;
    // A window gives back all of it; a bucket less when it has refilled since (never above full).
    if (!AlgoTraits<State>::kBucket) RC_ASSERT(back == estimate - actual);
    for (Micros probe : {later, later + limit.period() / 3, later + limit.period()}) {
      if (room(key, limit, probe) != room(model, limit, probe)) {
        RC_FAIL("limit " + limit.describe() + " at " + std::to_string(now) + " estimate " +
                std::to_string(estimate) + " actual " + std::to_string(actual) + " settled at " +
                std::to_string(later) + " probe " + std::to_string(probe) + "\nkey " +
                show_state(key) + "\nmodel " + show_state(model));
      }
    }
  });
  EXPECT_TRUE(ok);
}

// The buckets: a reservation on an idle key, then other charges while the model (charged the
// actual cost at the reservation) stays busy, its tat at or past each charge's time: every charge
// then moves key and model alike, so settling gives back the whole unused part, and the key is
// the model exactly (docs/SPEC.md §2.1). Returns how many cases had other charges in between.
template <typename State>
int busy_bucket_gives_back() {
  static int touched = 0;
  touched = 0;
  const bool ok = rc::check([] {
    const Limit limit = gen_limit<State>();
    const std::int64_t top = max_cost<State>(limit);
    const Micros tee = std::max<Micros>(1, limit.period() / limit.limit());
    Micros now = pick_whole_range<Micros>(0, 1'000'000'000);
    const std::int64_t estimate = pick_whole_range<std::int64_t>(1, top + 1);
    const std::int64_t actual = pick_whole_range<std::int64_t>(0, estimate);
    State key{};
    if (!core::decide(key, limit, now, estimate).allowed) return;
    const core::ChargeMark mark = core::mark(key, limit);
    State model{};
    charge(model, limit, now, actual);
    std::string log = "limit " + limit.describe() + ": reserve(" + std::to_string(now) + "," +
                      std::to_string(estimate) + "->" + std::to_string(actual) + ")";
    int charges = 0;
    for (int i = pick_whole_range(0, 8); i > 0; --i) {
      const Micros next = now + pick_whole_range<Micros>(0, tee + 1);
      State peek = model;
      if (core::decide(peek, limit, next, 0).reset_after <= 0) break;  // the model went idle
      now = next;
      const std::int64_t cost = pick_whole_range<std::int64_t>(1, top + 1);
      log += " check(" + std::to_string(now) + "," + std::to_string(cost) + ")";
      if (core::decide(key, limit, now, cost).allowed) {
        charge(model, limit, now, cost);
        ++charges;
      }
    }
    if (charges > 0) ++touched;
    const Micros later = now + pick_whole_range<Micros>(0, tee + 1);
    log += " settle(" + std::to_string(later) + ")";
    core::settle(key, limit, later, actual - estimate, mark);
    for (Micros probe : {later, later + limit.period() / 3, later + limit.period()}) {
      if (room(key, limit, probe) != room(model, limit, probe)) {
        RC_FAIL(log + "\nprobe " + std::to_string(probe) + ": key admits " +
                std::to_string(room(key, limit, probe)) + ", model " +
                std::to_string(room(model, limit, probe)) + "\nkey " + show_state(key) +
                "\nmodel " + show_state(model));
      }
    }
  });
  EXPECT_TRUE(ok);
  return touched;
}

TEST(SettleBusyBucket, GcraGivesBackTheUnusedPartAfterOtherCharges) {
  EXPECT_GT(busy_bucket_gives_back<core::GcraState>(), 10);
}

TEST(SettleBusyBucket, TokenBucketGivesBackTheUnusedPartAfterOtherCharges) {
  EXPECT_GT(busy_bucket_gives_back<core::TokenBucketState>(), 10);
}

// The buckets: a key whose state was dropped after the mark (a sweep, an expiry, a reset) and made
// anew, later or at an earlier `now` (a clock that went back), is in another busy stretch: a
// refund after other charges gives nothing back, since the key's history since the mark is
// unknown. (Made anew in the mark's very µs it cannot be told apart: docs/SPEC.md §2.1.)
template <typename State>
void expect_nothing_after_a_drop() {
  const Limit limit = limit_for<State>(10, 1'000'000, 10);  // T = 100 ms
  for (const Micros later : {Micros{900'000}, Micros{1'100'000}}) {
    State key{};
    ASSERT_TRUE(core::decide(key, limit, 1'000'000, 5).allowed);
    const core::ChargeMark mark = core::mark(key, limit);
    key = State{};  // dropped
    ASSERT_TRUE(core::decide(key, limit, later, 5).allowed);
    ASSERT_TRUE(core::decide(key, limit, later, 5).allowed);
    const State before = key;
    EXPECT_EQ(core::settle(key, limit, later, -5, mark), 0) << later;
    EXPECT_TRUE(test_util::same_state(key, before)) << later << ": " << show_state(key);
  }
}

TEST(SettleBusyBucket, GcraGivesNothingAfterTheKeyWasDroppedAndMadeAnew) {
  expect_nothing_after_a_drop<core::GcraState>();
}

TEST(SettleBusyBucket, TokenBucketGivesNothingAfterTheKeyWasDroppedAndMadeAnew) {
  expect_nothing_after_a_drop<core::TokenBucketState>();
}

TYPED_TEST(Settle, DebtIsChargedWithoutACheckAndDeniesUntilPaid) {
  using State = TypeParam;
  const Limit limit = limit_for<State>(10, 1'000'000, 10);
  State key{};
  ASSERT_TRUE(core::decide(key, limit, 0, 4).allowed);
  const core::ChargeMark mark = core::mark(key, limit);
  // Actual 14 for an estimate of 4: 10 more, charged though the key had only 6 left.
  EXPECT_EQ(core::settle(key, limit, 0, 10, mark), 10);
  State copy = key;
  const Decision d = core::decide(copy, limit, 0, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_GT(d.retry_after, 0);
  // The wait it names is exact: the same request is admitted then, not a µs before.
  State before = key;
  EXPECT_FALSE(core::decide(before, limit, d.retry_after - 1, 1).allowed);
  State at = key;
  EXPECT_TRUE(core::decide(at, limit, d.retry_after, 1).allowed);
  // A debt stops one full limit below empty.
  State deep{};
  EXPECT_EQ(core::settle(deep, limit, 0, 1'000, core::ChargeMark{}), 20);
  EXPECT_EQ(core::settle(deep, limit, 0, 1, core::ChargeMark{}), 0);
}

TYPED_TEST(Settle, NothingToGiveBackOnAnIdleKey) {
  using State = TypeParam;
  const Limit limit = limit_for<State>(10, 1'000'000, 10);
  State key{};
  ASSERT_TRUE(core::decide(key, limit, 5, 4).allowed);
  const core::ChargeMark mark = core::mark(key, limit);
  // Three periods later the charge no longer counts anywhere: a refund changes nothing.
  const State before = key;
  EXPECT_EQ(core::settle(key, limit, 3'000'005, -4, mark), 0);
  EXPECT_TRUE(test_util::same_state(key, before)) << show_state(key);
}

}  // namespace
}  // namespace spillway
