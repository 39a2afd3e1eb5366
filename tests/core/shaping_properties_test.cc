// Property tests of shaping (docs/SPEC.md §2.2): gcra and token_bucket with a max_delay D admit a
// request that would fit after a wait w <= D, charge it now and report Decision::delay = w.
//
// The model below is written from the SPEC's words, not from the code: a virtual queue. Every
// admitted request of cost c leaves the queue c*T after the one before it, but never before its
// own arrival, and B*T of the queue may be passed at once; so a request arriving at `at` may
// proceed at max(at, q + c*T - B*T), where q is when the queue empties (q = max(q, at)), and it is
// admitted iff that is at most D after `at`, rounded up to a whole µs. Times are kept exactly as
// multiples of 1/L' µs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/gcra.h"
#include "src/core/token_bucket.h"
#include "tests/core/state_testing.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using testing::pick_whole_range;

using test_util::make_limit;
using test_util::show;

struct ShapedRequest {
  Micros now;
  std::int64_t cost;
};

struct ShapedCase {
  std::int64_t limit;
  Micros period;
  std::int64_t burst;
  Micros max_delay;
  std::vector<ShapedRequest> trace;
};

// Traces that mostly move forward in steps near T, with bursts at one instant (what shaping is
// for), some pauses and, unless `forward_only`, some steps back.
ShapedCase gen_shaped_case(bool forward_only) {
  ShapedCase c{};
  c.limit = pick_whole_range<std::int64_t>(1, 41);
  c.period = pick_whole_range(0, 3) == 0 ? pick_whole_range<Micros>(1, 200)
                                         : c.limit * pick_whole_range<Micros>(1, 100'001);
  c.burst = pick_whole_range<std::int64_t>(1, 21);
  const Micros tee = std::max<Micros>(1, c.period / c.limit);
  switch (pick_whole_range(0, 4)) {
    case 0:
      c.max_delay = pick_whole_range<Micros>(1, tee + 2);  // less than one request's worth
      break;
    case 1:
      c.max_delay = pick_whole_range<Micros>(1, 3 * c.period + 2);
      break;
    default:
      c.max_delay = tee * pick_whole_range<Micros>(1, 30);
      break;
  }
  const int n = *rc::gen::inRange(1, 151);
  Micros t = pick_whole_range<Micros>(0, 1'000'000'000'000);
  for (int i = 0; i < n; ++i) {
    const int kind = pick_whole_range(0, 100);
    Micros dt = 0;
    if (kind < 40) {
      dt = 0;
    } else if (kind < 80) {
      dt = pick_whole_range<Micros>(1, 2 * tee + 2);
    } else if (kind < 92 || forward_only) {
      dt = pick_whole_range<Micros>(1, 2 * c.period + c.max_delay + 2);
    } else {
      dt = -pick_whole_range<Micros>(1, c.period + 2);
    }
    t = std::max<Micros>(0, t + dt);
    const int ck = pick_whole_range(0, 10);
    const std::int64_t cost =
        ck == 0 ? 0 : (ck < 7 ? 1 : pick_whole_range<std::int64_t>(0, c.burst + 3));
    c.trace.push_back({t, cost});
  }
  return c;
}

Limit shaped_limit(Algorithm a, const ShapedCase& c) {
  auto made = make_limit(a, c.limit, c.period, c.burst).with_max_delay(c.max_delay);
  if (!made) throw std::runtime_error(made.error().message);
  return *made;
}

std::string describe_case(const ShapedCase& c, std::size_t upto) {
  std::string out = "L=" + std::to_string(c.limit) + " P=" + std::to_string(c.period) +
                    " B=" + std::to_string(c.burst) + " D=" + std::to_string(c.max_delay) +
                    "\ntrace (now,cost):";
  for (std::size_t i = 0; i <= upto && i < c.trace.size(); ++i) {
    out += " (" + std::to_string(c.trace[i].now) + "," + std::to_string(c.trace[i].cost) + ")";
  }
  return out;
}

#define SHAPED_CHECK(cond)                                                \
  do {                                                                    \
    if (!(cond)) RC_FAIL(std::string("failed: " #cond "\n") + context()); \
  } while (false)

// The virtual queue of the header comment.
struct QueueModel {
  std::int64_t scale;     // L' = L / gcd(L, P): model times are µs * scale
  std::int64_t interval;  // T * scale = P'
  std::int64_t burst;
  std::int64_t max_delay;       // µs
  std::int64_t queue_end = -1;  // q, scaled; -1: empty since forever
  std::int64_t seen = -1;       // the latest time seen by an admission, µs

  struct Answer {
    bool allowed;
    Micros delay;
  };

  // A request of `cost` at `now`; a peek (cost 0) is never delayed. The delay is counted from
  // the caller's `now`, as retry_after is, even when `now` is behind the key's time.
  Answer offer(Micros now, std::int64_t cost) {
    if (cost > burst) return {false, 0};
    const std::int64_t longest = cost > 0 ? max_delay : 0;
    const std::int64_t at = std::max<std::int64_t>(now, seen);
    const std::int64_t q = std::max<std::int64_t>(queue_end, at * scale);
    const std::int64_t proceed =
        std::max<std::int64_t>(at * scale, q + cost * interval - burst * interval);
    // The wait in whole µs, rounded up.
    const std::int64_t wait = (proceed - at * scale + scale - 1) / scale;
    if (wait > longest) return {false, 0};
    if (cost > 0) {
      queue_end = q + cost * interval;
      seen = at;
    }
    return {true, wait > 0 ? at + wait - now : 0};
  }
};

template <typename State>
void check_against_queue_model(Algorithm algorithm) {
  const ShapedCase c = gen_shaped_case(false);
  const Limit lim = shaped_limit(algorithm, c);
  QueueModel model{.scale = lim.limit_units(),
                   .interval = lim.period_units(),
                   .burst = c.burst,
                   .max_delay = c.max_delay};
  State s{};
  for (std::size_t i = 0; i < c.trace.size(); ++i) {
    const ShapedRequest& r = c.trace[i];
    const Decision d = core::decide(s, lim, r.now, r.cost);
    const QueueModel::Answer want = model.offer(r.now, r.cost);
    const auto context = [&] {
      return describe_case(c, i) + "\ndecision: " + show(d) +
             "\nmodel: allowed=" + (want.allowed ? "true" : "false") +
             " delay=" + std::to_string(want.delay);
    };
    SHAPED_CHECK(d.allowed == want.allowed);
    SHAPED_CHECK(d.delay == want.delay);
    SHAPED_CHECK(d.delay >= 0);
    SHAPED_CHECK(r.cost > 0 || d.delay == 0);
    SHAPED_CHECK(d.delay == 0 || d.remaining == 0);
    SHAPED_CHECK(d.allowed == (d.retry_after == 0));
  }
}

RC_GTEST_PROP(ShapingProperties, GcraMatchesTheQueueModel, ()) {
  check_against_queue_model<core::GcraState>(Algorithm::kGcra);
}

RC_GTEST_PROP(ShapingProperties, TokenBucketMatchesTheQueueModel, ()) {
  check_against_queue_model<core::TokenBucketState>(Algorithm::kTokenBucket);
}

// One limiter written two ways, delays included.
RC_GTEST_PROP(ShapingProperties, TokenBucketAndGcraDelayIdentically, ()) {
  const ShapedCase c = gen_shaped_case(false);
  const Limit tl = shaped_limit(Algorithm::kTokenBucket, c);
  const Limit gl = shaped_limit(Algorithm::kGcra, c);
  core::TokenBucketState ts;
  core::GcraState gs;
  for (std::size_t i = 0; i < c.trace.size(); ++i) {
    const Decision dt = core::decide(ts, tl, c.trace[i].now, c.trace[i].cost);
    const Decision dg = core::decide(gs, gl, c.trace[i].now, c.trace[i].cost);
    const auto context = [&] {
      return describe_case(c, i) + "\ntoken_bucket: " + show(dt) + "\ngcra:         " + show(dg);
    };
    SHAPED_CHECK(dt == dg);
  }
}

// A denial's retry_after is exact with a delay too: the same request at now + retry_after is
// admitted (with a delay of at most D), at one µs before it denied.
template <typename State>
void check_shaped_retry(Algorithm algorithm) {
  const ShapedCase c = gen_shaped_case(false);
  const Limit lim = shaped_limit(algorithm, c);
  State s{};
  for (std::size_t i = 0; i < c.trace.size(); ++i) {
    const ShapedRequest& r = c.trace[i];
    const State before = s;
    const Decision d = core::decide(s, lim, r.now, r.cost);
    Decision at{}, just_before{};
    const auto context = [&] {
      return describe_case(c, i) + "\ndecision: " + show(d) + "\nat now+d: " + show(at) +
             "\nat now+d-1: " + show(just_before);
    };
    if (d.allowed || d.retry_after == kNever) continue;
    SHAPED_CHECK(d.retry_after > 0);
    State later = before;
    at = core::decide(later, lim, r.now + d.retry_after, r.cost);
    SHAPED_CHECK(at.allowed);
    State earlier = before;
    just_before = core::decide(earlier, lim, r.now + d.retry_after - 1, r.cost);
    SHAPED_CHECK(!just_before.allowed);
  }
}

RC_GTEST_PROP(ShapingProperties, GcraRetryAfterIsExact, ()) {
  check_shaped_retry<core::GcraState>(Algorithm::kGcra);
}

RC_GTEST_PROP(ShapingProperties, TokenBucketRetryAfterIsExact, ()) {
  check_shaped_retry<core::TokenBucketState>(Algorithm::kTokenBucket);
}

// What shaping is for: the admitted requests, each let go at now + delay, form a stream that the
// same limit without a delay admits whole (on traces whose time only moves forward). A delay
// never lets more through than the limit; it only moves requests later. T is a whole number of
// µs here: with T below or between µs, a delay is rounded up to the next µs, so a release may come
// up to 1 µs late and the next one then looks early to the plain limit by less than 1 µs.
RC_GTEST_PROP(ShapingProperties, ReleasedRequestsConformToTheUndelayedLimit, ()) {
  ShapedCase c = gen_shaped_case(true);
  c.period = c.limit * std::max<Micros>(1, c.period / c.limit);
  const Limit shaped = shaped_limit(Algorithm::kGcra, c);
  const Limit plain = make_limit(Algorithm::kGcra, c.limit, c.period, c.burst);
  core::GcraState s;
  std::vector<ShapedRequest> released;
  for (const ShapedRequest& r : c.trace) {
    const Decision d = core::decide(s, shaped, r.now, r.cost);
    if (d.allowed && r.cost > 0) released.push_back({r.now + d.delay, r.cost});
  }
  core::GcraState check;
  for (std::size_t i = 0; i < released.size(); ++i) {
    const Decision d = core::decide(check, plain, released[i].now, released[i].cost);
    const auto context = [&] {
      return describe_case(c, c.trace.size()) + "\nreleased #" + std::to_string(i) + " at " +
             std::to_string(released[i].now) + ": " + show(d);
    };
    SHAPED_CHECK(i == 0 || released[i].now >= released[i - 1].now);
    SHAPED_CHECK(d.allowed);
  }
}

// Without a delay bound nothing changes: max_delay 0 decides as a limit that never had one.
RC_GTEST_PROP(ShapingProperties, NoDelayIsThePlainLimit, ()) {
  ShapedCase c = gen_shaped_case(false);
  c.max_delay = 0;
  const Limit shaped = shaped_limit(Algorithm::kGcra, c);
  const Limit plain = make_limit(Algorithm::kGcra, c.limit, c.period, c.burst);
  core::GcraState a, b;
  for (std::size_t i = 0; i < c.trace.size(); ++i) {
    const Decision da = core::decide(a, shaped, c.trace[i].now, c.trace[i].cost);
    const Decision db = core::decide(b, plain, c.trace[i].now, c.trace[i].cost);
    const auto context = [&] { return describe_case(c, i) + "\n" + show(da) + "\n" + show(db); };
    SHAPED_CHECK(da == db);
  }
}

TEST(Shaping, FiveRequestsAtOnceAgainstOneASecondAreSpacedByASecond) {
  // nginx's limit_req rate=1r/s burst=4 nodelay-less: 1 now, then one a second.
  const Limit lim =
      *make_limit(Algorithm::kGcra, 1, kMicrosPerSecond, 1).with_max_delay(4 * kMicrosPerSecond);
  core::GcraState s;
  const Micros t0 = 5'000'000;
  for (int i = 0; i < 5; ++i) {
    const Decision d = core::decide(s, lim, t0, 1);
    EXPECT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.delay, i * kMicrosPerSecond) << i;
    EXPECT_EQ(d.verdict(), i == 0 ? Verdict::kAdmit : Verdict::kAdmitAfter);
    EXPECT_EQ(d.remaining, 0);
  }
  // The sixth would wait 5 s: denied, and retry_after is when it would wait 4 s.
  const Decision sixth = core::decide(s, lim, t0, 1);
  EXPECT_FALSE(sixth.allowed);
  EXPECT_EQ(sixth.retry_after, kMicrosPerSecond);
  EXPECT_EQ(sixth.delay, 0);
}

TEST(Shaping, ACostAboveTheBurstNeverFitsWhateverTheDelay) {
  const Limit lim = *make_limit(Algorithm::kTokenBucket, 10, kMicrosPerSecond, 2)
                         .with_max_delay(60 * kMicrosPerSecond);
  core::TokenBucketState s;
  const Decision d = core::decide(s, lim, 1'000, 3);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, kNever);
}

TEST(Shaping, ADebtChargeOnADelayedKeyIsChargedUpToTheBoundPastTheQueue) {
  // 1/s, burst 1, 10 s of delay: eight queued at 0 owe 8 s. A charge without a check (usage above
  // an estimate) may go on to (1 + kDebtLimits)*B*T + D = 12 s, never further, never back.
  const Limit lim =
      *make_limit(Algorithm::kGcra, 1, kMicrosPerSecond, 1).with_max_delay(10 * kMicrosPerSecond);
  core::GcraState s;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(core::decide(s, lim, 0, 1).allowed);
  EXPECT_EQ(core::settle(s, lim, 0, 3, core::ChargeMark{.at = -1}), 3);
  EXPECT_EQ(s.tat_us, 11 * kMicrosPerSecond);
  EXPECT_EQ(core::settle(s, lim, 0, 3, core::ChargeMark{.at = -1}), 1);
  EXPECT_EQ(core::settle(s, lim, 0, 3, core::ChargeMark{.at = -1}), 0);
  EXPECT_EQ(s.tat_us, 12 * kMicrosPerSecond);
  const Limit tl = *make_limit(Algorithm::kTokenBucket, 1, kMicrosPerSecond, 1)
                        .with_max_delay(10 * kMicrosPerSecond);
  core::TokenBucketState t;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(core::decide(t, tl, 0, 1).allowed);
  EXPECT_EQ(core::settle(t, tl, 0, 3, core::ChargeMark{.at = -1}), 3);
  EXPECT_EQ(core::settle(t, tl, 0, 3, core::ChargeMark{.at = -1}), 1);
  EXPECT_EQ(core::settle(t, tl, 0, 3, core::ChargeMark{.at = -1}), 0);
  // The next request would wait 12 s > 10 s: denied until the queue is 10 s long again.
  const Decision d = core::decide(s, lim, 0, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 2 * kMicrosPerSecond);
}

TEST(Shaping, APeekIsNeverDelayedAndADelayCountsFromTheCallersNow) {
  const Limit lim =
      *make_limit(Algorithm::kGcra, 1, kMicrosPerSecond, 1).with_max_delay(5 * kMicrosPerSecond);
  core::GcraState s;
  ASSERT_EQ(core::decide(s, lim, 10 * kMicrosPerSecond, 1).delay, 0);
  ASSERT_EQ(core::decide(s, lim, 10 * kMicrosPerSecond, 1).delay, kMicrosPerSecond);
  // The key owes 1 s past its burst: a peek says so (denied, retry in 1 s), charges nothing.
  const core::GcraState before = s;
  const Decision peek = core::decide(s, lim, 10 * kMicrosPerSecond, 0);
  EXPECT_FALSE(peek.allowed);
  EXPECT_EQ(peek.delay, 0);
  EXPECT_EQ(peek.retry_after, kMicrosPerSecond);
  EXPECT_EQ(s.tat_us, before.tat_us);
  // A caller whose clock is 300 ms behind the key's is decided at the key's time, and told to
  // wait from its own: 2 s + 300 ms.
  const Decision behind = core::decide(s, lim, 10 * kMicrosPerSecond - 300'000, 1);
  EXPECT_TRUE(behind.allowed);
  EXPECT_EQ(behind.delay, 2 * kMicrosPerSecond + 300'000);
}

TEST(Shaping, MaxDelayIsRefusedWhereItCannotBeExact) {
  for (Algorithm a : {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindow}) {
    auto made = make_limit(a, 10, kMicrosPerSecond).with_max_delay(500'000);
    ASSERT_FALSE(made.has_value());
    EXPECT_NE(made.error().message.find("max_delay applies only to token_bucket and gcra, not " +
                                        std::string(algorithm_name(a))),
              std::string::npos)
        << made.error().message;
    // 0 means no delay: every algorithm takes it.
    EXPECT_TRUE(make_limit(a, 10, kMicrosPerSecond).with_max_delay(0).has_value());
  }
  auto negative = make_limit(Algorithm::kGcra, 10, kMicrosPerSecond).with_max_delay(-1);
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.error().message.find("must not be negative"), std::string::npos);
  // The scaled wait must stay exact: 10^9 per µs for a year is far past 2^52.
  auto huge = make_limit(Algorithm::kGcra, 1'000'000'000, 1)
                  .with_max_delay(365 * 24 * 3600 * kMicrosPerSecond);
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("is too long for gcra 1000000000/1us"), std::string::npos)
      << huge.error().message;
  EXPECT_NE(huge.error().message.find("keeps the arithmetic exact"), std::string::npos)
      << huge.error().message;
  // describe() names the delay, so logs and errors show it.
  EXPECT_EQ(make_limit(Algorithm::kGcra, 5, kMicrosPerSecond, 1)
                .with_max_delay(2 * kMicrosPerSecond)
                ->describe(),
            "gcra 5/1s burst 1 max_delay 2s");
}

}  // namespace
}  // namespace spillway
