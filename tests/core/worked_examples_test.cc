// Hand-computed examples for the five algorithms (docs/SPEC.md §2). Every expected number is a
// literal derived by hand from the table of docs/SPEC.md §2; the comment next to it shows the
// arithmetic.
//
// Decision literals are {allowed, limit, remaining, retry_after, reset_after}.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/fixed_window.h"
#include "src/core/gcra.h"
#include "src/core/sliding_log.h"
#include "src/core/sliding_window.h"
#include "src/core/token_bucket.h"
#include "tests/core/state_testing.h"

namespace spillway {
namespace {

using core::FixedWindowState;
using core::GcraState;
using core::SlidingLogState;
using core::SlidingWindowState;
using core::TokenBucketState;
using test_util::AlgoTraits;
using test_util::limit_for;
using test_util::make_limit;
using test_util::same_state;
using test_util::show_state;

constexpr Micros kOneSecond = kMicrosPerSecond;

Decision D(bool allowed, std::int64_t limit, std::int64_t remaining, Micros retry, Micros reset) {
  return Decision{allowed, limit, remaining, retry, reset};
}

// ================================================================================================
// Limit::make
// ================================================================================================

TEST(LimitMake, AcceptsValidAndDefaultsBurstToLimit) {
  for (Algorithm a : kAlgorithms) {
    auto l = Limit::make(a, 10, kOneSecond);
    ASSERT_TRUE(l.has_value()) << algorithm_name(a) << ": " << l.error().message;
    EXPECT_EQ(l->algorithm(), a);
    EXPECT_EQ(l->limit(), 10);
    EXPECT_EQ(l->period(), kOneSecond);
    EXPECT_EQ(l->burst(), 10);  // default B = L
  }
  auto tb = Limit::make(Algorithm::kTokenBucket, 10, kOneSecond, 25);
  ASSERT_TRUE(tb.has_value());
  EXPECT_EQ(tb->burst(), 25);
  auto g = Limit::make(Algorithm::kGcra, 10, kOneSecond, 1);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->burst(), 1);
}

TEST(LimitMake, ReducesTheEmissionIntervalFraction) {
  // T = P/L = 10^6 / 3000; gcd(3000, 10^6) = 1000 -> 1000/3.
  auto l = make_limit(Algorithm::kGcra, 3000, kOneSecond);
  EXPECT_EQ(l.limit_units(), 3);
  EXPECT_EQ(l.period_units(), 1000);
  // gcd(60, 6*10^7) = 60 -> T = 10^6/1.
  auto m = make_limit(Algorithm::kTokenBucket, 60, 60 * kOneSecond);
  EXPECT_EQ(m.limit_units(), 1);
  EXPECT_EQ(m.period_units(), 1'000'000);
  // gcd(7, 10) = 1 -> 10/7.
  auto n = make_limit(Algorithm::kGcra, 7, 10);
  EXPECT_EQ(n.limit_units(), 7);
  EXPECT_EQ(n.period_units(), 10);
}

TEST(LimitMake, AcceptsRealisticLimits) {
  struct Case {
    std::int64_t limit;
    Micros period;
  };
  for (Algorithm a : kAlgorithms) {
    for (const Case& c :
         {Case{1000, kMicrosPerMinute}, Case{600, kMicrosPerMinute}, Case{60, kMicrosPerMinute},
          Case{5, kMicrosPerMinute}, Case{10, kOneSecond}, Case{1'000'000, kMicrosPerHour},
          Case{1, kMicrosPerDay}, Case{3, 7}, Case{1, 1}}) {
      auto l = Limit::make(a, c.limit, c.period);
      EXPECT_TRUE(l.has_value()) << algorithm_name(a) << " " << c.limit << "/" << c.period << ": "
                                 << l.error().message;
    }
  }
}

void expect_rejected(Result<Limit> r, const std::string& field, const std::string& what) {
  ASSERT_FALSE(r.has_value()) << what << " was accepted";
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << what;
  EXPECT_NE(r.error().message.find(field), std::string::npos)
      << what << ": message does not name '" << field << "': " << r.error().message;
}

TEST(LimitMake, RejectsBadLimitPeriodAndBurst) {
  for (Algorithm a : kAlgorithms) {
    const std::string n(algorithm_name(a));
    expect_rejected(Limit::make(a, 0, kOneSecond), "limit", n + " limit 0");
    expect_rejected(Limit::make(a, -5, kOneSecond), "limit", n + " limit -5");
    expect_rejected(Limit::make(a, 10, 0), "period", n + " period 0");
    expect_rejected(Limit::make(a, 10, -kOneSecond), "period", n + " period -1s");
    // Far beyond what exact (< 2^52) arithmetic can hold.
    expect_rejected(Limit::make(a, std::int64_t{1} << 60, kOneSecond), "limit", n + " limit 2^60");
    expect_rejected(Limit::make(a, 10, std::int64_t{1} << 60), "period", n + " period 2^60");
  }
  for (Algorithm a : {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindow}) {
    const std::string n(algorithm_name(a));
    expect_rejected(Limit::make(a, 10, kOneSecond, 5), "burst", n + " with burst 5");
    expect_rejected(Limit::make(a, 10, kOneSecond, 10), "burst", n + " with burst 10");
  }
  for (Algorithm a : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    const std::string n(algorithm_name(a));
    expect_rejected(Limit::make(a, 10, kOneSecond, 0), "burst", n + " burst 0");
    expect_rejected(Limit::make(a, 10, kOneSecond, -3), "burst", n + " burst -3");
  }
}

TEST(AlgorithmNames, RoundTrip) {
  for (Algorithm a : kAlgorithms) {
    auto back = parse_algorithm(algorithm_name(a));
    ASSERT_TRUE(back.has_value()) << algorithm_name(a);
    EXPECT_EQ(*back, a);
  }
  EXPECT_EQ(algorithm_name(Algorithm::kFixedWindow), "fixed_window");
  EXPECT_EQ(algorithm_name(Algorithm::kSlidingLog), "sliding_log");
  EXPECT_EQ(algorithm_name(Algorithm::kSlidingWindow), "sliding_window");
  EXPECT_EQ(algorithm_name(Algorithm::kTokenBucket), "token_bucket");
  EXPECT_EQ(algorithm_name(Algorithm::kGcra), "gcra");
  auto bad = parse_algorithm("leaky");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
}

// ================================================================================================
// fixed_window: n of window w = floor(now/P); admits iff n + c <= L.
// ================================================================================================

TEST(FixedWindowExample, CountsResetsAndRetries) {
  const Limit l = limit_for<FixedWindowState>(3, kOneSecond);
  FixedWindowState s;
  // t = 2.3 s: window 2 = [2 s, 3 s); reset = 3,000,000 - 2,300,000 = 700,000.
  EXPECT_EQ(core::decide(s, l, 2'300'000, 1), D(true, 3, 2, 0, 700'000));  // n = 1, 3 - 1 = 2
  EXPECT_EQ(core::decide(s, l, 2'300'000, 1), D(true, 3, 1, 0, 700'000));  // n = 2
  EXPECT_EQ(core::decide(s, l, 2'300'000, 1), D(true, 3, 0, 0, 700'000));  // n = 3
  // n + 1 = 4 > 3: wait for window 3 at 3,000,000 -> retry 700,000.
  EXPECT_EQ(core::decide(s, l, 2'300'000, 1), D(false, 3, 0, 700'000, 700'000));
  // 1 µs before the edge: retry = 3,000,000 - 2,999,999 = 1.
  EXPECT_EQ(core::decide(s, l, 2'999'999, 1), D(false, 3, 0, 1, 1));
  EXPECT_EQ(core::idle_at(s, l), 3'000'000);  // end of window 2
  // Window 3: n = 0; c = 2 -> n = 2, remaining 1, reset = 4,000,000 - 3,000,000.
  EXPECT_EQ(core::decide(s, l, 3'000'000, 2), D(true, 3, 1, 0, 1'000'000));
  // c = 4 > L = 3: never; remaining 1; reset = 4,000,000 - 3,500,000 = 500,000.
  EXPECT_EQ(core::decide(s, l, 3'500'000, 4), D(false, 3, 1, kNever, 500'000));
  // c = 2 > remaining 1: retry at 4,000,000 -> 500,000.
  EXPECT_EQ(core::decide(s, l, 3'500'000, 2), D(false, 3, 1, 500'000, 500'000));
  EXPECT_EQ(core::idle_at(s, l), 4'000'000);
  // Long after: idle again, a fresh window 10 = [10 s, 11 s); reset = 11 s - 10.2 s.
  EXPECT_EQ(core::decide(s, l, 10'200'000, 3), D(true, 3, 0, 0, 800'000));
}

TEST(FixedWindowExample, AdmitsTwoLimitsAcrossAWindowEdgeButGcraDoesNot) {
  // L = 10, P = 1 s: 10 at 999,999 (window 0), 10 at 1,000,000 (window 1): all 20 pass.
  const Limit fw = limit_for<FixedWindowState>(10, kOneSecond);
  FixedWindowState s;
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(s, fw, 999'999, 1).allowed ? 1 : 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(s, fw, 1'000'000, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, 20);  // 2L within 1 µs: the documented nature of fixed windows

  // GCRA, same L, P, B = L = 10, T = 100,000: the burst of 10 at 999,999 leaves
  // tat = 999,999 + 10 * 100,000 = 1,999,999; at 1,000,000: 1,999,999 + 100,000 - 1,000,000
  // = 1,099,999 > B*T = 1,000,000 -> denied. Only 10 pass.
  const Limit gl = limit_for<GcraState>(10, kOneSecond);
  GcraState g;
  admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(g, gl, 999'999, 1).allowed ? 1 : 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(g, gl, 1'000'000, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, 10);

  // The sliding log is exact, too: the 10 entries at 999,999 are live until 1,999,999.
  const Limit ll = limit_for<SlidingLogState>(10, kOneSecond);
  SlidingLogState sl;
  admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(sl, ll, 999'999, 1).allowed ? 1 : 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(sl, ll, 1'000'000, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, 10);
}

TEST(FixedWindowExample, DenseTraceCountsWindows) {
  // L = 3000 per 1 s, one request every 50 µs for t in [0, 2,000,000]: windows 0 and 1 give
  // 3000 each, window 2 holds only t = 2,000,000 -> 3000 + 3000 + 1 = 6001.
  const Limit l = limit_for<FixedWindowState>(3000, kOneSecond);
  FixedWindowState s;
  int admitted = 0;
  for (Micros t = 0; t <= 2'000'000; t += 50) admitted += core::decide(s, l, t, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, 6001);
}

// ================================================================================================
// sliding_log: live entries now - P < t_i <= now; admits iff sum + c <= L.
// ================================================================================================

TEST(SlidingLogExample, ExpiresEntriesExactly) {
  const Limit l = limit_for<SlidingLogState>(3, kOneSecond);
  SlidingLogState s;
  // (1.0 s, 1): sum 1; reset = 1,000,000 + 1,000,000 - 1,000,000.
  EXPECT_EQ(core::decide(s, l, 1'000'000, 1), D(true, 3, 2, 0, 1'000'000));
  // (1.2 s, 2): sum 3; reset = newest 1,200,000 + P - now = 1,000,000.
  EXPECT_EQ(core::decide(s, l, 1'200'000, 2), D(true, 3, 0, 0, 1'000'000));
  // At 1.5 s, c = 1: sum 3 + 1 > 3. (1.0 s,1) leaves at 2,000,000 -> retry 500,000;
  // reset = 2,200,000 - 1,500,000 = 700,000.
  EXPECT_EQ(core::decide(s, l, 1'500'000, 1), D(false, 3, 0, 500'000, 700'000));
  // c = 2 needs both entries gone: (1.2 s,2) leaves at 2,200,000 -> retry 700,000.
  EXPECT_EQ(core::decide(s, l, 1'500'000, 2), D(false, 3, 0, 700'000, 700'000));
  // c = 4 > L.
  EXPECT_EQ(core::decide(s, l, 1'500'000, 4), D(false, 3, 0, kNever, 700'000));
  // 1 µs before the first entry leaves: 1,000,000 > 1,999,999 - 1,000,000 still live.
  EXPECT_EQ(core::decide(s, l, 1'999'999, 1), D(false, 3, 0, 1, 200'001));
  EXPECT_EQ(core::idle_at(s, l), 2'200'000);
  // At 2.0 s: 1,000,000 > 1,000,000 is false -> expired; sum 2 + 1 = 3 <= 3.
  // Newest 2,000,000 -> reset 1,000,000.
  EXPECT_EQ(core::decide(s, l, 2'000'000, 1), D(true, 3, 0, 0, 1'000'000));
  // At 2.2 s: (1.2 s,2) expires; sum = 1 (2.0 s) + 1 = 2, remaining 1.
  EXPECT_EQ(core::decide(s, l, 2'200'000, 1), D(true, 3, 1, 0, 1'000'000));
  EXPECT_EQ(core::idle_at(s, l), 3'200'000);
  // A peek at 3.1 s: only (2.2 s, 1) is live -> remaining 2, reset 100,000.
  EXPECT_EQ(core::decide(s, l, 3'100'000, 0), D(true, 3, 2, 0, 100'000));
}

// ================================================================================================
// sliding_window: admits iff prev*(P - r) + (cur + c)*P <= L*P, r = now - w*P.
// ================================================================================================

TEST(SlidingWindowExample, WeighsThePreviousWindow) {
  const Limit l = limit_for<SlidingWindowState>(10, kOneSecond);
  SlidingWindowState s;
  // t = 0.9 s, window 0: 0 + 10*P <= 10*P -> admitted; remaining floor(10 - 10) = 0;
  // cur > 0 -> idle at (0 + 2)*P = 2,000,000 -> reset 1,100,000.
  EXPECT_EQ(core::decide(s, l, 900'000, 10), D(true, 10, 0, 0, 1'100'000));
  EXPECT_EQ(core::idle_at(s, l), 2'000'000);
  // t = 1.0 s, window 1, r = 0, prev = 10: 10*10^6 + 1*10^6 > 10^7 -> denied.
  // Retry: 10*(P - r) + 10^6 <= 10^7 -> r >= 100,000 -> 100,000.
  // Remaining floor(10 - 10*1) = 0; state unchanged, idle at 2,000,000 -> reset 1,000,000.
  EXPECT_EQ(core::decide(s, l, 1'000'000, 1), D(false, 10, 0, 100'000, 1'000'000));
  // t = 1.25 s, r = 250,000: 10*750,000 = 7.5*10^6; + 2*10^6 = 9.5*10^6 <= 10^7 -> admitted.
  // remaining floor((10^7 - 7.5*10^6 - 2*10^6)/10^6) = floor(0.5) = 0;
  // cur > 0 in window 1 -> idle at 3,000,000 -> reset 1,750,000.
  EXPECT_EQ(core::decide(s, l, 1'250'000, 2), D(true, 10, 0, 0, 1'750'000));
  // c = 1: 7.5*10^6 + 3*10^6 > 10^7 -> denied; 10*(P - r) + 3*10^6 <= 10^7 -> r >= 300,000,
  // i.e. t = 1,300,000 -> retry 50,000.
  EXPECT_EQ(core::decide(s, l, 1'250'000, 1), D(false, 10, 0, 50'000, 1'750'000));
  // t = 1,299,999: 10*700,001 + 3*10^6 = 10,000,010 > 10^7 -> denied, retry 1,
  // reset 3,000,000 - 1,299,999 = 1,700,001.
  EXPECT_EQ(core::decide(s, l, 1'299'999, 1), D(false, 10, 0, 1, 1'700'001));
  // t = 1.3 s: 7*10^6 + 3*10^6 = 10^7 -> admitted (cur = 3), remaining 0, reset 1,700,000.
  EXPECT_EQ(core::decide(s, l, 1'300'000, 1), D(true, 10, 0, 0, 1'700'000));
  // Peek at 1.5 s: 10*500,000 + 3*10^6 = 8*10^6 -> remaining floor(2) = 2; reset 1,500,000.
  EXPECT_EQ(core::decide(s, l, 1'500'000, 0), D(true, 10, 2, 0, 1'500'000));
  // Peek at 2.5 s, window 2: prev = 3, cur = 0, r = 500,000: 3*500,000 = 1.5*10^6 ->
  // remaining floor(8.5) = 8; state (window 1, cur 3) idle at 3,000,000 -> reset 500,000.
  EXPECT_EQ(core::decide(s, l, 2'500'000, 0), D(true, 10, 8, 0, 500'000));
  // c = 9: 1.5*10^6 + 9*10^6 > 10^7 -> denied. 3*(P - r) + 9*10^6 <= 10^7 -> P - r <= 333,333
  // -> r >= 666,667 -> t = 2,666,667 -> retry 166,667. (r = 666,666: 3*333,334 = 1,000,002.)
  EXPECT_EQ(core::decide(s, l, 2'500'000, 9), D(false, 10, 8, 166'667, 500'000));
  // c = 8: 1.5*10^6 + 8*10^6 = 9.5*10^6 -> admitted; remaining floor(0.5) = 0;
  // cur = 8 in window 2 -> idle at 4,000,000 -> reset 1,500,000.
  EXPECT_EQ(core::decide(s, l, 2'500'000, 8), D(true, 10, 0, 0, 1'500'000));
  EXPECT_EQ(core::idle_at(s, l), 4'000'000);
  // c = 11 > L.
  EXPECT_EQ(core::decide(s, l, 2'500'000, 11), D(false, 10, 0, kNever, 1'500'000));
  // Two windows later everything is forgotten: window 4 -> prev = cur = 0.
  EXPECT_EQ(core::decide(s, l, 4'000'000, 0), D(true, 10, 10, 0, 0));
}

TEST(SlidingWindowExample, EarlierNowInTheSameWindowIsTheLastAdmissionTime) {
  // Earlier in a window the previous window weighs more; docs/SPEC.md §2 says a `now` before the
  // time the key has seen (its last admission) is treated as that time, so it must not weigh more.
  const Limit l = limit_for<SlidingWindowState>(4, 1'000);
  SlidingWindowState s;
  // t = 500, window 0: 3 units; remaining floor(4 - 3) = 1; idle at 2 * 1000 -> reset 1500.
  EXPECT_EQ(core::decide(s, l, 500, 3), D(true, 4, 1, 0, 1'500));
  // t = 1900, window 1, r = 900: 3 * 100 + 1 * 1000 = 1300 <= 4000; remaining
  // floor((4000 - 300 - 1000) / 1000) = 2; idle at 3000 -> reset 1100.
  EXPECT_EQ(core::decide(s, l, 1'900, 1), D(true, 4, 2, 0, 1'100));
  // t = 1000 (back, same window) is judged at 1900: a peek sees 2 left, not
  // floor(4 - 3 * 1000/1000 - 1) = 0 as at r = 0; and 2 units fit (300 + 3000 <= 4000).
  const Decision peek = core::decide(s, l, 1'000, 0);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.remaining, 2);
  EXPECT_TRUE(core::decide(s, l, 1'000, 2).allowed);
  // t = 900 (back into window 0) is also judged at 1900: 300 + 4000 > 4000.
  EXPECT_FALSE(core::decide(s, l, 900, 1).allowed);
  // Charged to window 1 (cur = 1 + 2 = 3): at t = 2000 (window 2, r = 0) prev = 3:
  // 3000 + 1000 <= 4000 -> exactly 1 more fits.
  EXPECT_EQ(core::decide(s, l, 2'000, 0).remaining, 1);
  EXPECT_TRUE(core::decide(s, l, 2'000, 1).allowed);
  EXPECT_FALSE(core::decide(s, l, 2'000, 1).allowed);
}

// ================================================================================================
// token_bucket: tau <= B, +L per P, starts full; admits iff tau >= c.
// ================================================================================================

TEST(TokenBucketExample, RefillsContinuously) {
  // L = 10, P = 1 s, B = 4: T = 100,000 µs per token.
  const Limit l = limit_for<TokenBucketState>(10, kOneSecond, 4);
  TokenBucketState s;
  // Full (4) at t = 0; c = 4 -> tau = 0; refill of 4 tokens takes 400,000.
  EXPECT_EQ(core::decide(s, l, 0, 4), D(true, 10, 0, 0, 400'000));
  // c = 1 needs 1 token: 100,000.
  EXPECT_EQ(core::decide(s, l, 0, 1), D(false, 10, 0, 100'000, 400'000));
  // c = 5 > B = 4: never.
  EXPECT_EQ(core::decide(s, l, 0, 5), D(false, 10, 0, kNever, 400'000));
  // t = 150,000: tau = 1.5 -> c = 1 -> tau = 0.5, remaining 0; full after 3.5*T = 350,000.
  EXPECT_EQ(core::decide(s, l, 150'000, 1), D(true, 10, 0, 0, 350'000));
  // c = 1 needs 0.5 more: 50,000.
  EXPECT_EQ(core::decide(s, l, 150'000, 1), D(false, 10, 0, 50'000, 350'000));
  // c = 4 needs 3.5 more: 350,000.
  EXPECT_EQ(core::decide(s, l, 150'000, 4), D(false, 10, 0, 350'000, 350'000));
  EXPECT_EQ(core::idle_at(s, l), 500'000);
  // t = 499,999: tau = 0.5 + 349,999/100,000 = 3.99999 -> c = 4 denied, retry 1,
  // remaining floor(3.99999) = 3, reset 1.
  EXPECT_EQ(core::decide(s, l, 499'999, 4), D(false, 10, 3, 1, 1));
  // t = 500,000: tau = 4 -> admitted -> 0.
  EXPECT_EQ(core::decide(s, l, 500'000, 4), D(true, 10, 0, 0, 400'000));
  EXPECT_EQ(core::idle_at(s, l), 900'000);
}

TEST(TokenBucketExample, BurstAboveLimit) {
  // L = 2, P = 1 s, B = 5: a cost of 5 > L passes from full; 6 > B never does.
  const Limit l = limit_for<TokenBucketState>(2, kOneSecond, 5);
  TokenBucketState s;
  EXPECT_EQ(core::decide(s, l, 7'000'000, 6), D(false, 2, 5, kNever, 0));
  // c = 5 -> tau 0; T = 500,000 -> 5 tokens take 2,500,000.
  EXPECT_EQ(core::decide(s, l, 7'000'000, 5), D(true, 2, 0, 0, 2'500'000));
}

// ================================================================================================
// gcra: admits iff max(tat, now) + c*T - now <= B*T; then tat = max(tat, now) + c*T.
// ================================================================================================

TEST(GcraExample, BurstAtOneInstantThenSpacing) {
  // L = 10, P = 1 s, B = 5: T = 100,000.
  const Limit l = limit_for<GcraState>(10, kOneSecond, 5);
  GcraState s;
  const Micros t0 = 1'000'000;
  // k-th request at t0: tat = t0 + (k-1)*T; (k-1)T + T <= 5T iff k <= 5.
  // remaining floor((5T - kT)/T) = 5 - k; reset = tat - now = k*T.
  for (int k = 1; k <= 5; ++k) {
    EXPECT_EQ(core::decide(s, l, t0, 1), D(true, 10, 5 - k, 0, k * 100'000)) << "k=" << k;
  }
  // 6th: tat = t0 + 5T; 5T + T > 5T -> denied; retry = tat + (1 - 5)T - now = T.
  EXPECT_EQ(core::decide(s, l, t0, 1), D(false, 10, 0, 100'000, 500'000));
  EXPECT_EQ(core::decide(s, l, t0, 6), D(false, 10, 0, kNever, 500'000));  // 6 > B
  // +50,000: tat - now = 450,000; retry = 500,000 + 100,000 - 500,000 - 50,000 = 50,000.
  EXPECT_EQ(core::decide(s, l, t0 + 50'000, 1), D(false, 10, 0, 50'000, 450'000));
  // +100,000: 400,000 + 100,000 <= 500,000 -> admitted; tat = t0 + 600,000 -> reset 500,000.
  EXPECT_EQ(core::decide(s, l, t0 + 100'000, 1), D(true, 10, 0, 0, 500'000));
  EXPECT_EQ(core::idle_at(s, l), t0 + 600'000);
  // Idle again at t0 + 2 s: tat restarts at now; remaining 5 - 1 = 4.
  EXPECT_EQ(core::decide(s, l, t0 + 2'000'000, 1), D(true, 10, 4, 0, 100'000));
}

TEST(GcraExample, BurstAdmitsExactlyBAtOneInstant) {
  // B back to back from idle, then denied (not B + 1 as in redis-cell).
  struct Case {
    std::int64_t limit;
    Micros period;
    std::int64_t burst;
  };
  for (const Case& c : {Case{100, kOneSecond, 7}, Case{2, kOneSecond, 5}, Case{10, kOneSecond, 10},
                        Case{3000, kOneSecond, 1}, Case{1, 60 * kOneSecond, 1}, Case{5, 3, 4}}) {
    const Limit l = limit_for<GcraState>(c.limit, c.period, c.burst);
    GcraState s;
    int admitted = 0;
    for (int i = 0; i < 3 * c.burst + 5; ++i) {
      admitted += core::decide(s, l, 42'000'000, 1).allowed ? 1 : 0;
    }
    EXPECT_EQ(admitted, c.burst) << l.describe();
  }
}

// One request every 50 µs for t in [0, 2,000,000]. With B >= 2 and T > 50 µs the limiter stays
// saturated, so the (n+1)-th admission needs n*T <= t + (B - 1)*T; at t = 2,000,000 = K*T that
// gives n + 1 <= K + B admissions in all.
template <typename State>
int dense_count(const Limit& l) {
  State s;
  int admitted = 0;
  for (Micros t = 0; t <= 2'000'000; t += 50) admitted += core::decide(s, l, t, 1).allowed ? 1 : 0;
  return admitted;
}

TEST(GcraExample, ExactAtHighRates) {
  // 3000/s: T = 1000/3 = 333.33 µs; K = 2,000,000 / T = 6000 -> 6000 + B.
  EXPECT_EQ(dense_count<GcraState>(limit_for<GcraState>(3000, kOneSecond)), 9000);     // B = 3000
  EXPECT_EQ(dense_count<GcraState>(limit_for<GcraState>(3000, kOneSecond, 7)), 6007);  // B = 7
  // 2000/s: T = 500; K = 4000 -> 4000 + 2000 = 6000 (not unlimited).
  EXPECT_EQ(dense_count<GcraState>(limit_for<GcraState>(2000, kOneSecond)), 6000);
  EXPECT_EQ(dense_count<GcraState>(limit_for<GcraState>(2000, kOneSecond, 2)), 4002);
  // 300/s: T = 3333.33; K = 600 -> 600 + 300 = 900 (a truncated T would give 333/s).
  EXPECT_EQ(dense_count<GcraState>(limit_for<GcraState>(300, kOneSecond)), 900);
}

TEST(TokenBucketExample, ExactAtHighRates) {
  // The same limiter as GCRA: same counts.
  EXPECT_EQ(dense_count<TokenBucketState>(limit_for<TokenBucketState>(3000, kOneSecond)), 9000);
  EXPECT_EQ(dense_count<TokenBucketState>(limit_for<TokenBucketState>(3000, kOneSecond, 7)), 6007);
  EXPECT_EQ(dense_count<TokenBucketState>(limit_for<TokenBucketState>(2000, kOneSecond)), 6000);
  EXPECT_EQ(dense_count<TokenBucketState>(limit_for<TokenBucketState>(300, kOneSecond)), 900);
}

TEST(GcraExample, SubMicrosecondEmissionInterval) {
  // L = 3,000,000 per 1 s: T = 1/3 µs. From idle, B = L passes at once; one µs later exactly
  // 3 more tokens have come back (1 µs / (1/3 µs)).
  const Limit l = limit_for<GcraState>(3'000'000, kOneSecond, 10);
  GcraState s;
  EXPECT_EQ(core::decide(s, l, 5'000'000, 10).allowed, true);
  EXPECT_EQ(core::decide(s, l, 5'000'000, 1).allowed, false);
  // tat = 5,000,000 + 10/3; at +1 µs: tat + c/3 - now <= 10/3 iff c <= 3.
  GcraState copy = s;
  EXPECT_EQ(core::decide(copy, l, 5'000'001, 4).allowed, false);
  EXPECT_EQ(core::decide(s, l, 5'000'001, 3).allowed, true);
  EXPECT_EQ(core::decide(s, l, 5'000'001, 1).allowed, false);
}

// ================================================================================================
// token_bucket and gcra: a non-integer T, L = 3, P = 1 s, B = 3 -> T = 333,333.33 µs.
// ================================================================================================

template <typename State>
class BucketTypes : public ::testing::Test {};
using BucketStates = ::testing::Types<TokenBucketState, GcraState>;
TYPED_TEST_SUITE(BucketTypes, BucketStates);

TYPED_TEST(BucketTypes, FractionalEmissionInterval) {
  const Limit l = limit_for<TypeParam>(3, kOneSecond);
  TypeParam s;
  // From full: c = 3 -> empty; full again after 3T = 1,000,000.
  EXPECT_EQ(core::decide(s, l, 0, 3), D(true, 3, 0, 0, 1'000'000));
  // One token after ceil(333,333.33) = 333,334.
  EXPECT_EQ(core::decide(s, l, 0, 1), D(false, 3, 0, 333'334, 1'000'000));
  // t = 333,333: tau = 333,333 * 3 / 10^6 = 0.999999 -> denied, retry 1;
  // reset = ceil(10^6 - 333,333) = 666,667.
  EXPECT_EQ(core::decide(s, l, 333'333, 1), D(false, 3, 0, 1, 666'667));
  // t = 333,334: tau = 1.000002 -> admitted -> 0.000002; tat = 10^6 + T = 1,333,333.33,
  // reset = ceil(1,333,333.33 - 333,334) = ceil(999,999.33) = 1,000,000.
  EXPECT_EQ(core::decide(s, l, 333'334, 1), D(true, 3, 0, 0, 1'000'000));
  EXPECT_EQ(core::idle_at(s, l), 1'333'334);  // ceil(1,333,333.33)
  // t = 1,000,000: tau = 0.000002 + 666,666 * 3 / 10^6 = 2.0 -> remaining 2; c = 2 passes.
  EXPECT_EQ(core::decide(s, l, 1'000'000, 0), D(true, 3, 2, 0, 333'334));
  EXPECT_EQ(core::decide(s, l, 1'000'000, 2), D(true, 3, 0, 0, 1'000'000));
}

// ================================================================================================
// All five algorithms.
// ================================================================================================

template <typename State>
class AllAlgorithms : public ::testing::Test {};
using AllStates = ::testing::Types<FixedWindowState, SlidingLogState, SlidingWindowState,
                                   TokenBucketState, GcraState>;
TYPED_TEST_SUITE(AllAlgorithms, AllStates);

// t = 5.5 s is in the middle of fixed window 5 (P = 1 s) and of sliding window 5.
constexpr Micros kT = 5'500'000;

TYPED_TEST(AllAlgorithms, DeniedLargeCostDoesNotLockOutSmallRequests) {
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(core::decide(s, l, kT, 1).allowed) << i;
  // Remaining 1: c = 10 (= L, so not "never") is denied and charges nothing.
  const TypeParam before = s;
  const Decision big = core::decide(s, l, kT, 10);
  EXPECT_FALSE(big.allowed);
  EXPECT_GE(big.retry_after, 1);
  EXPECT_EQ(big.remaining, 1);
  EXPECT_TRUE(same_state(s, before)) << show_state(s) << " vs " << show_state(before);
  EXPECT_FALSE(core::decide(s, l, kT, 2).allowed);
  const Decision small = core::decide(s, l, kT, 1);
  EXPECT_TRUE(small.allowed);
  EXPECT_EQ(small.remaining, 0);
  EXPECT_FALSE(core::decide(s, l, kT, 1).allowed);
}

TYPED_TEST(AllAlgorithms, DeniedCostAboveRemainingDoesNotLockOut) {
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  EXPECT_EQ(core::decide(s, l, kT, 4).remaining, 6);  // 10 - 4
  EXPECT_FALSE(core::decide(s, l, kT, 7).allowed);    // 7 > 6
  EXPECT_FALSE(core::decide(s, l, kT, 7).allowed);    // still: nothing was charged
  const Decision fit = core::decide(s, l, kT, 6);     // exactly the 6 left
  EXPECT_TRUE(fit.allowed);
  EXPECT_EQ(fit.remaining, 0);
  EXPECT_EQ(fit.retry_after, 0);
  EXPECT_EQ(fit.reset_after, core::decide(s, l, kT, 0).reset_after);  // same state, same answer
  EXPECT_FALSE(core::decide(s, l, kT, 1).allowed);
}

TYPED_TEST(AllAlgorithms, CostAboveLimitIsNever) {
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  // Idle key, c = 11 > L (= B): never; nothing changes; remaining L; nothing to reset.
  EXPECT_EQ(core::decide(s, l, kT, 11), D(false, 10, 10, kNever, 0));
  EXPECT_EQ(core::decide(s, l, kT, 1'000'000), D(false, 10, 10, kNever, 0));
  EXPECT_TRUE(same_state(s, TypeParam{})) << show_state(s);
  // After some use it is still "never", not a wait.
  ASSERT_TRUE(core::decide(s, l, kT, 3).allowed);
  const Decision d = core::decide(s, l, kT, 11);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, kNever);
  EXPECT_EQ(d.remaining, 7);
  // c = L is possible, only later.
  EXPECT_GE(core::decide(s, l, kT, 10).retry_after, 1);
}

TYPED_TEST(AllAlgorithms, ClockGoingBackwardsGrantsNothing) {
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(core::decide(s, l, kT, 1).allowed) << i;
  const TypeParam used = s;
  // 1 ms back (same fixed window), 1 s back (the previous window), far back.
  for (Micros back : {Micros{1'000}, Micros{1'000'000}, Micros{4'000'000}}) {
    const Decision d = core::decide(s, l, kT - back, 1);
    EXPECT_FALSE(d.allowed) << "back " << back;
    EXPECT_EQ(d.remaining, 0) << "back " << back;
    EXPECT_GE(d.retry_after, 1) << "back " << back;
    EXPECT_TRUE(same_state(s, used)) << "back " << back << ": " << show_state(s);
    const Decision peek = core::decide(s, l, kT - back, 0);
    EXPECT_EQ(peek.remaining, 0) << "back " << back;
    EXPECT_TRUE(same_state(s, used)) << "back " << back << ": " << show_state(s);
  }
}

TYPED_TEST(AllAlgorithms, AdmissionAtAnEarlierTimeIsChargedAtTheLaterTime) {
  // 5 at 5.5 s, then 5 "at 4.5 s" (treated as 5.5 s, resp. the window start 5.0 s), then at
  // 5.6 s: window algorithms still hold all 10 (fixed window 5 ends at 6 s, log entries live to
  // 6.5 s, sliding window 5 has cur = 10) -> 0 pass; the buckets refilled 100,000 µs * 10/s = 1
  // token since 5.5 s -> exactly 1 passes. A limiter that stored 4.5 s would grant more.
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(core::decide(s, l, kT, 1).allowed) << i;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(core::decide(s, l, kT - 1'000'000, 1).allowed) << i;
  EXPECT_FALSE(core::decide(s, l, kT - 1'000'000, 1).allowed);
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += core::decide(s, l, 5'600'000, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, AlgoTraits<TypeParam>::kBucket ? 1 : 0) << show_state(s);
}

TYPED_TEST(AllAlgorithms, PeekReportsAndNeverChangesState) {
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  // Idle key: everything left, nothing to reset, and the key stays idle.
  EXPECT_EQ(core::decide(s, l, kT, 0), D(true, 10, 10, 0, 0));
  EXPECT_TRUE(same_state(s, TypeParam{})) << show_state(s);
  ASSERT_TRUE(core::decide(s, l, kT, 3).allowed);
  const TypeParam after3 = s;
  const Decision p = core::decide(s, l, kT, 0);
  EXPECT_TRUE(p.allowed);
  EXPECT_EQ(p.remaining, 7);
  EXPECT_EQ(p.retry_after, 0);
  EXPECT_GT(p.reset_after, 0);
  EXPECT_TRUE(same_state(s, after3)) << show_state(s);
  // Peeks later on (including much later, when idle) change nothing either.
  for (Micros t : {kT + 1, kT + 50'000, kT + 499'999, kT + 3'000'000, kT + 100'000'000}) {
    const Decision q = core::decide(s, l, t, 0);
    EXPECT_TRUE(q.allowed) << t;
    EXPECT_GE(q.remaining, 7) << t;
    EXPECT_TRUE(same_state(s, after3)) << t << ": " << show_state(s);
  }
  EXPECT_EQ(core::decide(s, l, kT + 100'000'000, 0), D(true, 10, 10, 0, 0));
  // An exhausted key: a peek is still "allowed" (0 fits) and reports 0 left.
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(core::decide(s, l, kT, 1).allowed);
  const TypeParam full = s;
  const Decision e = core::decide(s, l, kT, 0);
  EXPECT_TRUE(e.allowed);
  EXPECT_EQ(e.remaining, 0);
  EXPECT_EQ(e.retry_after, 0);
  EXPECT_TRUE(same_state(s, full)) << show_state(s);
}

TYPED_TEST(AllAlgorithms, RemainingNeverNegativeWhileHammered) {
  const Limit l = limit_for<TypeParam>(5, kOneSecond);
  TypeParam s;
  for (int i = 0; i < 200; ++i) {
    const Micros t = kT + i * 1'000;
    for (std::int64_t c : {1, 2, 5, 6, 0}) {
      const Decision d = core::decide(s, l, t, c);
      EXPECT_GE(d.remaining, 0);
      EXPECT_LE(d.remaining, 5);
      EXPECT_EQ(d.limit, 5);
      EXPECT_GE(d.reset_after, 0);
      if (d.allowed) {
        EXPECT_EQ(d.retry_after, 0);
      }
    }
  }
}

TYPED_TEST(AllAlgorithms, NewKeyIsAlreadyIdle) {
  // A default-constructed state is an idle key: idle at any time from 0 on.
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  EXPECT_LE(core::idle_at(TypeParam{}, l), 0);
  TypeParam s;
  EXPECT_EQ(core::decide(s, l, 0, 0), D(true, 10, 10, 0, 0));
}

TYPED_TEST(AllAlgorithms, IdleAtAfterOneRequest) {
  // L = 10, P = 1 s, one unit at t = 0: fixed window ends at 1 s; the log entry leaves at 1 s;
  // the sliding window forgets cur only after window 1, at 2 s; buckets refill 1 token in T.
  const Limit l = limit_for<TypeParam>(10, kOneSecond);
  TypeParam s;
  ASSERT_TRUE(core::decide(s, l, 0, 1).allowed);
  Micros expected = 0;
  if constexpr (AlgoTraits<TypeParam>::kAlgorithm == Algorithm::kSlidingWindow) {
    expected = 2'000'000;
  } else if constexpr (AlgoTraits<TypeParam>::kBucket) {
    expected = 100'000;
  } else {
    expected = 1'000'000;
  }
  EXPECT_EQ(core::idle_at(s, l), expected);
}

}  // namespace
}  // namespace spillway
