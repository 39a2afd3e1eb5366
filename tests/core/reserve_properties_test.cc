// Property tests of a limit that keeps part of its capacity for higher priorities
// (Limit::with_reserved, docs/SPEC.md §2.4), on every algorithm, on random traces.
//
// What SPEC states, checked against the plain limit on the same state:
//   - admission: a request of cost c > 0 under `reserved` r is decided as the plain limit decides
//     cost c + r (allowed, retry_after, delay): it passes only if r would still be left after it;
//   - charge: an admitted request changes the state exactly as the plain limit charging c does
//     (one state for every priority: nothing of r is charged);
//   - remaining: what a peek under r reports is the plain peek's less r, at least 0;
//   - r = 0 is the plain limit, field for field.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/fixed_window.h"
#include "src/core/gcra.h"
#include "src/core/sliding_log.h"
#include "src/core/sliding_window.h"
#include "src/core/token_bucket.h"
#include "tests/core/state_testing.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using test_util::AlgoTraits;
using test_util::limit_for;
using test_util::same_state;
using test_util::show;
using test_util::show_state;
using testing::pick_whole_range;

template <typename State>
class ReservedShare : public ::testing::Test {};
TYPED_TEST_SUITE(ReservedShare, test_util::AllStateTypes, test_util::AlgorithmNames);

struct ReservedCase {
  Limit plain;
  Limit reserved;
};

// L in 1..40, P tiny, whole-µs T or any; B in 1..30; r anywhere in 0..capacity; buckets delay
// half the time.
template <typename State>
ReservedCase reserved_case() {
  const std::int64_t limit = pick_whole_range<std::int64_t>(1, 41);
  const Micros period = pick_whole_range(0, 3) == 0 ? pick_whole_range<Micros>(1, 200)
                                                    : limit * pick_whole_range<Micros>(1, 100'001);
  Limit plain = limit_for<State>(limit, period, pick_whole_range<std::int64_t>(1, 31));
  if constexpr (AlgoTraits<State>::kBucket) {
    if (pick_whole_range(0, 2) == 0) {
      plain = *plain.with_max_delay(pick_whole_range<Micros>(1, 3 * period + 2));
    }
  }
  const std::int64_t r = pick_whole_range<std::int64_t>(0, plain.capacity() + 1);
  Result<Limit> reserved = plain.with_reserved(r);
  RC_ASSERT(reserved.has_value());
  return {plain, *reserved};
}

template <typename State>
void reserved_property() {
  const ReservedCase c = reserved_case<State>();
  const std::int64_t r = c.reserved.reserved();
  const int steps = *rc::gen::inRange(1, 150);
  Micros now = pick_whole_range<Micros>(0, 1'000'000'000'000);
  const Micros tee = std::max<Micros>(1, c.plain.period() / c.plain.limit());
  State s{};
  std::string trace;
  const auto context = [&] {
    return "limit " + c.reserved.describe() + "\ntrace (now,cost):" + trace + "\nstate " +
           show_state(s);
  };
  for (int i = 0; i < steps; ++i) {
    const int kind = pick_whole_range(0, 10);
    if (kind < 3) {
      now += 0;
    } else if (kind < 7) {
      now += pick_whole_range<Micros>(1, 2 * tee + 2);
    } else if (kind < 9) {
      now += pick_whole_range<Micros>(1, 2 * c.plain.period() + 2);
    } else {
      now = std::max<Micros>(0, now - pick_whole_range<Micros>(1, c.plain.period() + 2));
    }
    const std::int64_t cost =
        pick_whole_range(0, 4) == 0 ? 0 : pick_whole_range<std::int64_t>(1, c.plain.capacity() + 2);
    trace += " (" + std::to_string(now) + "," + std::to_string(cost) + ")";

    State peek_r = s;
    State peek_p = s;
    const Decision pr = core::decide(peek_r, c.reserved, now, 0);
    const Decision pp = core::decide(peek_p, c.plain, now, 0);
    if (pr.remaining != std::max<std::int64_t>(0, pp.remaining - r)) {
      RC_FAIL("peek remaining " + show(pr) + " vs plain " + show(pp) + "\n" + context());
    }
    if (cost == 0) continue;

    State as_plain = s;  // the plain limit asked for c + r: the admission test
    State charged = s;   // the plain limit charging c: the state an admission leaves
    const Decision want = core::decide(as_plain, c.plain, now, cost + r);
    const Decision got = core::decide(s, c.reserved, now, cost);
    if (got.allowed != want.allowed || got.retry_after != want.retry_after ||
        got.delay != want.delay || got.limit != c.plain.limit()) {
      RC_FAIL("cost " + std::to_string(cost) + ": " + show(got) + " vs plain at cost + " +
              std::to_string(r) + ": " + show(want) + "\n" + context());
    }
    if (got.allowed) {
      (void)core::decide(charged, c.plain, now, cost);
    }
    if (!same_state(s, charged)) {
      RC_FAIL("state " + show_state(s) + " vs the plain charge " + show_state(charged) + "\n" +
              context());
    }
  }
}

TYPED_TEST(ReservedShare, AdmitsAsThePlainLimitWouldWithTheReserveLeftAndChargesOnlyTheCost) {
  EXPECT_TRUE(rc::check([] { reserved_property<TypeParam>(); }));
}

TYPED_TEST(ReservedShare, NoReserveIsThePlainLimitAndAReserveOutsideTheCapacityIsRefused) {
  const Limit plain = limit_for<TypeParam>(10, kMicrosPerSecond, 6);
  const Result<Limit> none = plain.with_reserved(0);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(*none, plain);
  EXPECT_EQ(none->admit_capacity(), plain.capacity());
  const Result<Limit> all = plain.with_reserved(plain.capacity());
  ASSERT_TRUE(all.has_value()) << "a priority may be given nothing";
  EXPECT_EQ(all->admit_capacity(), 0);
  TypeParam state{};
  const Decision d = core::decide(state, *all, kMicrosPerSecond, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, kNever) << "nothing is left for this priority, ever";
  for (const std::int64_t bad : {std::int64_t{-1}, plain.capacity() + 1}) {
    const Result<Limit> refused = plain.with_reserved(bad);
    ASSERT_FALSE(refused.has_value()) << bad;
    EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
    EXPECT_NE(refused.error().message.find("reserved must be between 0 and the capacity " +
                                           std::to_string(plain.capacity())),
              std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find(std::to_string(bad)), std::string::npos);
  }
  EXPECT_NE(plain.with_reserved(2)->describe().find("reserved 2"), std::string::npos);
  EXPECT_NE(*plain.with_reserved(2), plain) << "a reserve is part of the limit's identity";
}

}  // namespace
}  // namespace spillway
