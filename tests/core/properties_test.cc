// Property tests of the five algorithms on random traces (docs/SPEC.md §2).
//
// Traces: L in 1..50, P in 1..10^7 µs, B in 1..60, up to 200 requests whose times mostly move
// forward (often not at all, often by about T, sometimes by up to 2P) and sometimes go back.
// Costs 0..max(L, B)+2. Reference models below are written from the table of docs/SPEC.md §2, not
// from the code.
//
// Time going back: docs/SPEC.md §2 treats a `now` before the time the key has seen (its last
// admission) as that time. The waits a decision reports (retry_after, reset_after) are still
// measured from the caller's `now`, so that "the same request at now + retry_after is admitted"
// holds literally.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
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

using testing::pick_whole_range;

using core::FixedWindowState;
using core::GcraState;
using core::SlidingLogState;
using core::SlidingWindowState;
using core::TokenBucketState;
using test_util::AlgoTraits;
using test_util::limit_for;
using test_util::make_limit;
using test_util::max_cost;
using test_util::same_state;
using test_util::show;
using test_util::show_state;

// The properties every algorithm must hold run for each algorithm of the list
// (spillway/algorithm_list.h): a new algorithm is tested without a line here.
template <typename State>
class EveryAlgorithm : public ::testing::Test {};
TYPED_TEST_SUITE(EveryAlgorithm, test_util::AllStateTypes, test_util::AlgorithmNames);

constexpr Micros kNoSeen = std::numeric_limits<Micros>::min();

struct Req {
  Micros now;
  std::int64_t cost;
};

struct Params {
  std::int64_t limit;
  Micros period;
  std::int64_t burst;
};

Params gen_params() {
  Params p{};
  p.limit = pick_whole_range<std::int64_t>(1, 51);
  switch (pick_whole_range(0, 4)) {
    case 0:  // tiny periods: T below 1 µs when P < L
      p.period = pick_whole_range<Micros>(1, 100);
      break;
    case 1:  // whole-µs emission interval
      p.period = p.limit * pick_whole_range<Micros>(1, 200'001);
      break;
    case 2:  // round seconds
      p.period = kMicrosPerSecond * pick_whole_range<Micros>(1, 11);
      break;
    default:
      p.period = pick_whole_range<Micros>(1, 10'000'001);
      break;
  }
  p.burst = pick_whole_range<std::int64_t>(1, 61);
  return p;
}

std::vector<Req> gen_trace(const Params& p, Micros start_max = 1'000'000'000'000) {
  const int n = *rc::gen::inRange(1, 201);
  const Micros tee = std::max<Micros>(1, p.period / p.limit);
  const std::int64_t cost_top = std::max(p.limit, p.burst) + 3;  // exclusive
  Micros t = pick_whole_range<Micros>(0, start_max);
  std::vector<Req> trace;
  trace.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int kind = pick_whole_range(0, 100);
    Micros dt = 0;
    if (kind < 30) {
      dt = 0;
    } else if (kind < 65) {
      dt = pick_whole_range<Micros>(1, 2 * tee + 2);
    } else if (kind < 88) {
      dt = pick_whole_range<Micros>(1, 2 * p.period + 2);
    } else {
      dt = -pick_whole_range<Micros>(1, p.period + 2);
    }
    t = std::max<Micros>(0, t + dt);
    const int ck = pick_whole_range(0, 10);
    const std::int64_t cost =
        ck == 0 ? 0 : (ck < 6 ? 1 : pick_whole_range<std::int64_t>(0, cost_top));
    trace.push_back(Req{t, cost});
  }
  return trace;
}

std::string describe(const Limit& l, const std::vector<Req>& trace, std::size_t upto) {
  std::string out = "limit " + l.describe() + " (L=" + std::to_string(l.limit()) +
                    " P=" + std::to_string(l.period()) + " B=" + std::to_string(l.burst()) +
                    ")\ntrace (now,cost):";
  for (std::size_t i = 0; i <= upto && i < trace.size(); ++i) {
    out += " (" + std::to_string(trace[i].now) + "," + std::to_string(trace[i].cost) + ")";
  }
  return out;
}

// Fails the property with the repro context when `cond` does not hold.
#define PROP_CHECK(cond)                                                  \
  do {                                                                    \
    if (!(cond)) RC_FAIL(std::string("failed: " #cond "\n") + context()); \
  } while (false)

// ================================================================================================
// a. retry_after is exact: at now + d admitted, at now + d - 1 denied (nothing else happening).
// ================================================================================================

template <typename State>
void check_retry(const Limit& lim, const std::vector<Req>& trace) {
  State s{};
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Req& r = trace[i];
    const State before = s;
    const Decision d = core::decide(s, lim, r.now, r.cost);
    Decision at{}, just_before{};
    const auto context = [&] {
      return describe(lim, trace, i) + "\nstate before last: " + show_state(before) +
             "\nlast decision: " + show(d) + "\nat now+d: " + show(at) +
             "\nat now+d-1: " + show(just_before);
    };
    if (!d.allowed) {
      PROP_CHECK(d.retry_after != 0);
      PROP_CHECK((d.retry_after == kNever) == (r.cost > max_cost<State>(lim)));
      // Also for a `now` behind the key's past: the key is then judged at its own time, but
      // "now + d" is still counted from the caller's `now`, as docs/SPEC.md §2 words it.
      if (d.retry_after > 0) {
        State later = before;
        at = core::decide(later, lim, r.now + d.retry_after, r.cost);
        PROP_CHECK(at.allowed);
        State earlier = before;
        just_before = core::decide(earlier, lim, r.now + d.retry_after - 1, r.cost);
        PROP_CHECK(!just_before.allowed);
      }
    }
  }
}

template <typename State>
void retry_property() {
  const Params p = gen_params();
  const Limit lim = limit_for<State>(p.limit, p.period, p.burst);
  check_retry<State>(lim, gen_trace(p));
}

TYPED_TEST(EveryAlgorithm, RetryAfterIsExact) {
  EXPECT_TRUE(rc::check([] { retry_property<TypeParam>(); }));
}

// ================================================================================================
// b. token_bucket and gcra with the same (L, P, B) are one limiter: identical decisions.
// ================================================================================================

RC_GTEST_PROP(Properties, TokenBucketAndGcraDecideIdentically, ()) {
  const Params p = gen_params();
  const std::vector<Req> trace = gen_trace(p);
  const Limit tl = make_limit(Algorithm::kTokenBucket, p.limit, p.period, p.burst);
  const Limit gl = make_limit(Algorithm::kGcra, p.limit, p.period, p.burst);
  TokenBucketState ts;
  GcraState gs;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Decision dt = core::decide(ts, tl, trace[i].now, trace[i].cost);
    const Decision dg = core::decide(gs, gl, trace[i].now, trace[i].cost);
    const auto context = [&] {
      return describe(gl, trace, i) + "\ntoken_bucket: " + show(dt) + "\ngcra:         " + show(dg);
    };
    PROP_CHECK(dt == dg);
  }
}

// ================================================================================================
// c. sliding_log against a plain list of admitted (t, c).
// ================================================================================================

struct LogModel {
  std::int64_t limit;
  Micros period;
  std::vector<std::pair<Micros, std::int64_t>> admitted;  // (time charged, cost), ascending

  Micros newest() const { return admitted.empty() ? kNoSeen : admitted.back().first; }
  std::int64_t live(Micros at) const {
    std::int64_t sum = 0;
    for (const auto& [t, c] : admitted) {
      if (t > at - period && t <= at) sum += c;
    }
    return sum;
  }
};

RC_GTEST_PROP(Properties, SlidingLogMatchesReferenceModel, ()) {
  const Params p = gen_params();
  const std::vector<Req> trace = gen_trace(p);
  const Limit lim = limit_for<SlidingLogState>(p.limit, p.period);
  const std::int64_t L = p.limit;
  const Micros P = p.period;
  LogModel model{L, P, {}};
  SlidingLogState s;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Req& r = trace[i];
    const Micros eff = std::max(r.now, model.newest());
    const std::int64_t live = model.live(eff);
    const bool allowed = live + r.cost <= L;
    const Decision d = core::decide(s, lim, r.now, r.cost);
    Decision want{allowed, L, L - live - (allowed ? r.cost : 0), 0, 0};
    if (!allowed && r.cost > L) {
      want.retry_after = kNever;
    } else if (!allowed) {
      // Oldest live entries leave first; find the first expiry after which c fits.
      std::int64_t left = live;
      for (const auto& [t, c] : model.admitted) {
        if (t <= eff - P) continue;
        left -= c;
        if (left + r.cost <= L) {
          want.retry_after = t + P - r.now;
          break;
        }
      }
    }
    if (allowed && r.cost > 0) model.admitted.emplace_back(eff, r.cost);
    const std::int64_t live_after = live + (allowed ? r.cost : 0);
    want.reset_after = live_after > 0 ? model.newest() + P - r.now : 0;

    const auto context = [&] {
      return describe(lim, trace, i) + "\nwant " + show(want) + "\ngot  " + show(d) + "\nstate " +
             show_state(s);
    };
    PROP_CHECK(d.allowed == want.allowed);
    PROP_CHECK(d.remaining == want.remaining);
    PROP_CHECK(d.limit == L);
    PROP_CHECK(d.retry_after == want.retry_after);
    PROP_CHECK(d.reset_after == want.reset_after);
    // Never more than L in any window (t - P, t] ending at an admission.
    if (d.allowed && r.cost > 0) PROP_CHECK(model.live(eff) <= L);
  }
}

// ================================================================================================
// d. Invariants of every algorithm.
// ================================================================================================

template <typename State>
void check_invariants(const Limit& lim, const std::vector<Req>& trace) {
  const std::int64_t cap = max_cost<State>(lim);
  State s{};
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Req& r = trace[i];
    const State before = s;
    State peeked = s;
    const Decision peek = core::decide(peeked, lim, r.now, 0);
    const Decision d = core::decide(s, lim, r.now, r.cost);
    const auto context = [&] {
      return describe(lim, trace, i) + "\nstate before: " + show_state(before) +
             "\nstate after:  " + show_state(s) + "\npeek: " + show(peek) + "\ngot:  " + show(d);
    };
    // A peek is always "allowed", waits for nothing and changes nothing.
    PROP_CHECK(same_state(peeked, before));
    PROP_CHECK(peek.allowed);
    PROP_CHECK(peek.retry_after == 0);
    // Field ranges.
    PROP_CHECK(d.limit == lim.limit());
    PROP_CHECK(d.remaining >= 0);
    PROP_CHECK(d.remaining <= cap);
    PROP_CHECK(d.reset_after >= 0);
    PROP_CHECK(d.allowed ? d.retry_after == 0 : d.retry_after != 0);
    if (!d.allowed) PROP_CHECK((d.retry_after == kNever) == (r.cost > cap));
    if (r.cost > cap) PROP_CHECK(!d.allowed);
    // remaining is what fits: admitted iff the cost fits in what a peek reports.
    PROP_CHECK(d.allowed == (peek.remaining >= r.cost));
    if (d.allowed) {
      PROP_CHECK(d.remaining == peek.remaining - r.cost);
    } else {
      PROP_CHECK(d.remaining == peek.remaining);
      PROP_CHECK(d.reset_after == peek.reset_after);
    }
    // Only an admitted cost > 0 changes state.
    if (!d.allowed || r.cost == 0) PROP_CHECK(same_state(s, before));
    if (d.allowed && r.cost > 0) PROP_CHECK(!same_state(s, State{}));
    // reset_after is the time from `now` until idle_at.
    if (!same_state(s, State{})) {
      PROP_CHECK(d.reset_after == std::max<Micros>(0, core::idle_at(s, lim) - r.now));
    }
  }
}

template <typename State>
void invariants_property() {
  const Params p = gen_params();
  const Limit lim = limit_for<State>(p.limit, p.period, p.burst);
  check_invariants<State>(lim, gen_trace(p));
}

TYPED_TEST(EveryAlgorithm, Invariants) {
  EXPECT_TRUE(rc::check([] { invariants_property<TypeParam>(); }));
}

// ================================================================================================
// e. fixed_window and sliding_window against reference models of the formulas in docs/SPEC.md §2.
// ================================================================================================

RC_GTEST_PROP(Properties, FixedWindowMatchesReferenceModel, ()) {
  const Params p = gen_params();
  const std::vector<Req> trace = gen_trace(p);
  const Limit lim = limit_for<FixedWindowState>(p.limit, p.period);
  const std::int64_t L = p.limit;
  const Micros P = p.period;
  std::int64_t mw = 0;  // model window
  std::int64_t mn = 0;  // model count
  FixedWindowState s;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Req& r = trace[i];
    const Micros eff = std::max(r.now, mw * P);  // before the window start -> the start
    const std::int64_t w = eff / P;
    const std::int64_t n = (w == mw) ? mn : 0;
    const bool allowed = n + r.cost <= L;
    const std::int64_t n_after = n + (allowed ? r.cost : 0);
    Decision want{allowed, L, L - n_after, 0, n_after > 0 ? (w + 1) * P - r.now : 0};
    if (!allowed) want.retry_after = r.cost > L ? kNever : (w + 1) * P - r.now;
    if (allowed && r.cost > 0) {
      mw = w;
      mn = n_after;
    }
    const Decision d = core::decide(s, lim, r.now, r.cost);
    const auto context = [&] {
      return describe(lim, trace, i) + "\nwant " + show(want) + "\ngot  " + show(d);
    };
    PROP_CHECK(d == want);
  }
}

// Sliding window model: state (w, prev, cur) as in the table of docs/SPEC.md §2, plus the time of
// the last admission, because docs/SPEC.md §2 treats a `now` before the time a key has seen as that
// time.
struct WindowModel {
  std::int64_t limit;
  Micros period;
  std::int64_t w = 0;
  std::int64_t prev = 0;
  std::int64_t cur = 0;
  Micros last = kNoSeen;

  struct View {
    std::int64_t w, prev, cur;
    Micros r;
  };
  // The counts as seen at `at` (>= w*P) without changing anything.
  View view(Micros at) const {
    const std::int64_t aw = at / period;
    View v{aw, 0, 0, at - aw * period};
    if (aw == w) {
      v.prev = prev;
      v.cur = cur;
    } else if (aw == w + 1) {
      v.prev = cur;
    }
    return v;
  }
  bool fits(const View& v, std::int64_t c) const {
    return v.prev * (period - v.r) + (v.cur + c) * period <= limit * period;
  }
};

std::int64_t floor_div(std::int64_t n, std::int64_t d) {
  const std::int64_t q = n / d;
  return (n % d != 0 && n < 0) ? q - 1 : q;
}

RC_GTEST_PROP(Properties, SlidingWindowMatchesReferenceModel, ()) {
  const Params p = gen_params();
  const std::vector<Req> trace = gen_trace(p);
  const Limit lim = limit_for<SlidingWindowState>(p.limit, p.period);
  const std::int64_t L = p.limit;
  const Micros P = p.period;
  WindowModel m{L, P};
  SlidingWindowState s;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Req& r = trace[i];
    const Micros eff = std::max({r.now, m.last, m.w * P});
    const WindowModel::View v = m.view(eff);
    const bool allowed = m.fits(v, r.cost);
    const std::int64_t cur_after = v.cur + (allowed ? r.cost : 0);
    // floor(L - (prev*(P - r)/P + cur)), never below 0.
    const std::int64_t remaining =
        std::max<std::int64_t>(0, floor_div(L * P - v.prev * (P - v.r) - cur_after * P, P));
    Decision want{allowed, L, remaining, 0, 0};
    if (!allowed && r.cost > L) {
      want.retry_after = kNever;
    } else if (!allowed) {
      // The estimate never grows while nothing is admitted, so "fits" is monotone in time:
      // binary search the first fitting instant in (eff, eff + 2P] (at eff + 2P it is empty).
      Micros lo = 0;
      Micros hi = 2 * P;
      while (hi - lo > 1) {
        const Micros mid = lo + (hi - lo) / 2;
        (m.fits(m.view(eff + mid), r.cost) ? hi : lo) = mid;
      }
      want.retry_after = eff + hi - r.now;
    }
    if (allowed && r.cost > 0) {
      m.w = v.w;
      m.prev = v.prev;
      m.cur = cur_after;
      m.last = eff;
    }
    // Idle once both counts are forgotten: cur > 0 lasts through the next window.
    const Micros idle = m.cur > 0 ? (m.w + 2) * P : (m.prev > 0 ? (m.w + 1) * P : 0);
    want.reset_after = std::max<Micros>(0, idle - r.now);

    const Decision d = core::decide(s, lim, r.now, r.cost);
    const auto context = [&] {
      return describe(lim, trace, i) + "\nwant " + show(want) + "\ngot  " + show(d) + "\nstate " +
             show_state(s);
    };
    PROP_CHECK(d == want);
  }
}

// ================================================================================================
// f. Large magnitudes: L and B up to 10^9, P up to 10^11 µs (> 1 day), times up to kMaxNow / 2.
// Whatever Limit::make accepts must be decided by the same rules, without overflow (the suite
// also runs under UBSan).
// ================================================================================================

// Log-uniform-ish: a decimal order of magnitude first, then a value below it.
std::int64_t log_pick(int max_exp10) {
  const int e = pick_whole_range(0, max_exp10 + 1);
  std::int64_t top = 1;
  for (int i = 0; i < e; ++i) top *= 10;
  return pick_whole_range<std::int64_t>(1, top + 1);
}

template <typename State>
void large_magnitudes_property() {
  Params p{};
  p.limit = log_pick(9);
  p.period = log_pick(11);
  p.burst = log_pick(9);
  auto made = AlgoTraits<State>::kBucket
                  ? Limit::make(AlgoTraits<State>::kAlgorithm, p.limit, p.period, p.burst)
                  : Limit::make(AlgoTraits<State>::kAlgorithm, p.limit, p.period);
  if (!made) {
    RC_TAG("rejected by Limit::make");
    return;
  }
  // Keep every time the checks reach (up to ~400 P of trace plus a few bursts' worth of
  // waiting) below kMaxNow.
  const double burst_span = static_cast<double>(max_cost<State>(*made)) *
                            static_cast<double>(p.period) / static_cast<double>(p.limit);
  const double reach = 404.0 * static_cast<double>(p.period) + 4.0 * burst_span;
  if (reach > static_cast<double>(kMaxNow) / 2) {
    RC_TAG("waits too long to test");
    return;
  }
  RC_TAG("checked");
  const std::vector<Req> trace = gen_trace(p, kMaxNow / 2);
  check_retry<State>(*made, trace);
  check_invariants<State>(*made, trace);
}

TYPED_TEST(EveryAlgorithm, LargeMagnitudes) {
  EXPECT_TRUE(rc::check([] { large_magnitudes_property<TypeParam>(); }));
}

RC_GTEST_PROP(Properties, LargeMagnitudesTokenBucketAndGcraDecideIdentically, ()) {
  Params p{};
  p.limit = log_pick(9);
  p.period = log_pick(11);
  p.burst = log_pick(9);
  auto tl = Limit::make(Algorithm::kTokenBucket, p.limit, p.period, p.burst);
  auto gl = Limit::make(Algorithm::kGcra, p.limit, p.period, p.burst);
  RC_ASSERT(tl.has_value() == gl.has_value());  // one limiter, one domain
  if (!tl) return;
  const double span =
      static_cast<double>(p.burst) * static_cast<double>(p.period) / static_cast<double>(p.limit);
  if (404.0 * static_cast<double>(p.period) + 4.0 * span > static_cast<double>(kMaxNow) / 2) {
    return;
  }
  const std::vector<Req> trace = gen_trace(p, kMaxNow / 2);
  TokenBucketState ts;
  GcraState gs;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Decision dt = core::decide(ts, *tl, trace[i].now, trace[i].cost);
    const Decision dg = core::decide(gs, *gl, trace[i].now, trace[i].cost);
    const auto context = [&] {
      return describe(*gl, trace, i) + "\ntoken_bucket: " + show(dt) +
             "\ngcra:         " + show(dg);
    };
    PROP_CHECK(dt == dg);
  }
}

}  // namespace
}  // namespace spillway
