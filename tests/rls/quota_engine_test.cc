// RLQS quota assignments (src/rls/quota_engine.h, docs/SPEC.md §9.7) on an in-process store with a
// manual clock: what each bucket is told, and exactly what each assignment charges the shared
// key (a new bucket: its size plus its refill over the ttl; the same bucket again: the refill
// from where the last charge ended), so the Envoys' admissions are always paid for in advance.
#include "src/rls/quota_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "src/rls/rls_match.h"

namespace spillway::rls {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

std::shared_ptr<const RlsRules> rules() {
  auto domain = parse_rls_yaml(R"(
domain: q
descriptors:
  - key: name
    value: window
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: name
    value: free
    rate_limit: {unlimited: true}
  - key: name
    value: shared
    rate_limit: {unit: minute, requests_per_unit: 600, algorithm: token_bucket}
  - key: name
    value: fair
    rate_limit: {unit: minute, requests_per_unit: 2400, algorithm: token_bucket}
  - key: name
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: name
    value: per_second
    rate_limit: {unit: second, requests_per_unit: 40, algorithm: gcra, burst: 240}
)");
  EXPECT_TRUE(domain.has_value()) << domain.error().message;
  auto all = std::make_shared<RlsRules>();
  all->domains.emplace("q", std::move(*domain));
  return all;
}

struct QuotaFixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(100 * 60 * kSecond);
  MemoryStore store{MemoryStoreOptions{.clock = clock}};
  std::shared_ptr<const RlsRules> loaded = rules();
  QuotaService service{store, [this] { return loaded; }, policy::RlsOnError::kError, clock};

  Result<std::vector<QuotaAssignment>> report(QuotaStream& stream, std::string_view domain,
                                              std::vector<QuotaUsage> usages) {
    Result<std::vector<QuotaAssignment>> out = std::unexpected(Error{Errc::kInternal, "no answer"});
    stream.report(domain, std::move(usages), [&out](auto answered) { out = std::move(answered); });
    return out;
  }
  std::int64_t left(std::string_view value) {
    const std::vector<RlsEntry> entries = {{"name", std::string(value)}};
    const Limit limit = *Limit::make(Algorithm::kFixedWindow, 1000, kMicrosPerMinute);
    Result<Decision> d = store.check(rls_key("q", entries), limit, 0);
    EXPECT_TRUE(d.has_value());
    return d ? d->remaining : -1;
  }
};

QuotaUsage usage(std::string value, Micros elapsed, std::uint64_t allowed,
                 std::uint64_t denied = 0) {
  return {.bucket = {{"name", std::move(value)}},
          .elapsed = elapsed,
          .allowed = allowed,
          .denied = denied};
}

TEST(QuotaEngine, EachBucketIsToldByItsRule) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  auto answered = f.report(
      stream, "q",
      {usage("nobody", kSecond, 5), usage("free", kSecond, 5), usage("closed", kSecond, 5)});
  ASSERT_TRUE(answered.has_value()) << answered.error().message;
  ASSERT_EQ(answered->size(), 3u);
  EXPECT_EQ((*answered)[0].strategy, QuotaStrategy::kAllowAll);
  EXPECT_EQ((*answered)[1].strategy, QuotaStrategy::kAllowAll);
  EXPECT_EQ((*answered)[2].strategy, QuotaStrategy::kDenyAll);
  EXPECT_EQ((*answered)[2].ttl, 2 * kSecond) << "the report interval + 600 ms, whole seconds";
  EXPECT_EQ((*answered)[0].bucket, (std::vector<RlsEntry>{{"name", "nobody"}}));
  QuotaStream other(f.service);
  auto unknown = f.report(other, "elsewhere", {usage("window", kSecond, 5)});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ((*unknown)[0].strategy, QuotaStrategy::kAllowAll) << "an unknown domain has no limit";
}

// What a new bucket of `a` costs: max_tokens (Envoy starts it full) plus the refill, whole
// seconds as Envoy reads them, until the expiry (+ the grace for the answer's trip).
std::int64_t qe_new_cost(const QuotaAssignment& a) {
  return a.max_tokens +
         static_cast<std::int64_t>(std::ceil(static_cast<double>(a.tokens_per_fill) *
                                             static_cast<double>(a.ttl + kQuotaGrace) /
                                             static_cast<double>(a.fill_interval)));
}

TEST(QuotaEngine, AnAssignmentIsChargedBeforeItIsSentAndExtensionsPayTheirRefill) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  // A stream's first report of a bucket Envoy already had, 100 requests in 1 s: ttl 1 s + 600 ms
  // = 2 s (whole seconds); F = the minute; 1.25 x 100 x 60 = 7500 wanted, 1000/min at most.
  auto first = f.report(stream, "q", {usage("window", kSecond, 60, 40)});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const QuotaAssignment& a = (*first)[0];
  ASSERT_EQ(a.strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ(a.fill_interval, 60 * kSecond);
  EXPECT_EQ(a.ttl, 2 * kSecond);
  EXPECT_EQ(a.tokens_per_fill, 1000u) << "the limit's rate over F";
  EXPECT_EQ(a.max_tokens, 34u) << "what 1000/min brings in the 2 s ttl";
  EXPECT_EQ(f.left("window"), 1000 - qe_new_cost(a));

  // A second later, the same demand: the same bucket, extended by a second of refill.
  const std::int64_t before = f.left("window");
  f.clock->advance(kSecond);
  auto second = f.report(stream, "", {usage("window", kSecond, 100)});
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*second)[0], a) << "the same assignment: Envoy keeps its bucket";
  EXPECT_EQ(f.left("window"), before - 17) << "ceil(1000 x 1 s / 60 s)";
}

TEST(QuotaEngine, WhenLittleIsLeftTheBucketShrinksThenDenies) {
  QuotaFixture f;
  const Limit window = *Limit::make(Algorithm::kFixedWindow, 1000, kMicrosPerMinute);
  const std::vector<RlsEntry> entries = {{"name", "window"}};
  ASSERT_TRUE(f.store.check(rls_key("q", entries), window, 980)->allowed);  // RLS calls, say
  QuotaStream stream(f.service);
  // 1000/min would cost 72: the largest new bucket the 20 left pay for (9 + 11).
  auto smaller = f.report(stream, "q", {usage("window", kSecond, 100)});
  ASSERT_TRUE(smaller.has_value());
  ASSERT_EQ((*smaller)[0].strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ((*smaller)[0].tokens_per_fill, 268u);
  EXPECT_EQ(f.left("window"), 0);
  // Nothing left: neither a bigger bucket nor the extension of this one can be paid: DENY_ALL.
  f.clock->advance(kSecond);
  auto denied = f.report(stream, "", {usage("window", kSecond, 1000)});
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ((*denied)[0].strategy, QuotaStrategy::kDenyAll);
}

TEST(QuotaEngine, EnvoysFirstReportOfABucketSubscribesIt) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  // Envoy reports a bucket the moment it creates it: time_elapsed 0, the one request it saw.
  auto first = f.report(stream, "q", {usage("window", 0, 1)});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const QuotaAssignment& a = (*first)[0];
  ASSERT_EQ(a.strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ(a.ttl, kFirstQuotaTtl) << "no report interval seen yet";
  EXPECT_EQ(a.fill_interval, 60 * kSecond);
  EXPECT_EQ(a.tokens_per_fill, 30u) << "what 1000 / 16 pays for while the demand is unknown";
  EXPECT_EQ(f.left("window"), 1000 - qe_new_cost(a));
  // Unset or 0 (a reporting_interval under 1 s), or under 1 ms: the stream goes on.
  for (Micros elapsed : {Micros{0}, Micros{1}, Micros{0}}) {
    f.clock->advance(kSecond / 10);
    auto next = f.report(stream, "", {usage("window", elapsed, 3), usage("free", 0, 1)});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ((*next)[0].strategy, QuotaStrategy::kTokenBucket);
    EXPECT_EQ((*next)[0].ttl, kSecond) << "100 ms + 600 ms, whole seconds";
  }
}

TEST(QuotaEngine, TheSameBucketTwiceInOneReportIsAnsweredOnceAndChargedOnce) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  QuotaUsage swapped{.bucket = {{"b", "2"}, {"name", "window"}}, .elapsed = kSecond, .allowed = 7};
  QuotaUsage again = swapped;
  std::swap(again.bucket[0], again.bucket[1]);
  again.allowed = 3;
  auto answered = f.report(
      stream, "q", {usage("window", kSecond, 50), swapped, usage("window", kSecond, 50), again});
  ASSERT_TRUE(answered.has_value()) << answered.error().message;
  ASSERT_EQ(answered->size(), 2u) << "one action per bucket";
  const QuotaAssignment& a = (*answered)[0];
  ASSERT_EQ(a.strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ(a.max_tokens, 34u) << "the counts summed: 1.25 x 100/s is over the limit";
  EXPECT_EQ((*answered)[1].strategy, QuotaStrategy::kAllowAll);
  EXPECT_EQ(f.left("window"), 1000 - qe_new_cost(a)) << "charged once, nothing stranded";
}

TEST(QuotaEngine, ALongReportingIntervalGetsATtlThatOutlivesIt) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  ASSERT_TRUE(f.report(stream, "q", {usage("window", 0, 1)}).has_value());
  for (int i = 0; i < 3; ++i) {
    f.clock->advance(120 * kSecond);
    auto next = f.report(stream, "", {usage("window", 120 * kSecond, 240)});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ((*next)[0].strategy, QuotaStrategy::kTokenBucket);
    EXPECT_EQ((*next)[0].ttl, 180 * kSecond) << "1.5 x 120 s: no 60 s cap";
    EXPECT_EQ((*next)[0].ttl % kSecond, 0);
  }
}

// One Envoy as its rate_limit_quota filter behaves (global_client_impl.cc): it reports a bucket
// at once when its first request creates it (time_elapsed 0), then every `interval` with
// time_elapsed in whole seconds; an assignment whose max_tokens and tokens_per_fill equal the one
// in force keeps the token bucket (its tokens and its refill rate: fill_interval.seconds is not
// compared), any other starts a new one full; the bucket refills tokens_per_fill per whole
// seconds of fill_interval; the action expires ttl.seconds after it arrives, then (no fallback
// configured, no_assignment_behavior deny) it denies.
struct QeEnvoy {
  QuotaStream stream;
  Micros interval = kSecond;
  bool created = false;
  bool has = false;
  QuotaAssignment action;
  double tokens = 0;
  double per_second = 0;
  Micros refilled = 0;
  Micros expiry = 0;
  Micros last_report = 0;
  Micros next_report = 0;
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t admitted = 0;
  int expired_before_report = 0;
  int new_buckets = 0;  // token buckets started (a new bucket costs the shared key a full one)

  explicit QeEnvoy(const QuotaService& service, Micros every) : stream(service), interval(every) {}

  void receive(const QuotaAssignment& a, Micros now) {
    const bool same = has && action.strategy == QuotaStrategy::kTokenBucket &&
                      a.strategy == QuotaStrategy::kTokenBucket &&
                      a.max_tokens == action.max_tokens &&
                      a.tokens_per_fill == action.tokens_per_fill;
    if (a.strategy == QuotaStrategy::kTokenBucket && !same) {
      ++new_buckets;
      tokens = a.max_tokens;
      refilled = now;
      per_second =
          static_cast<double>(a.tokens_per_fill) / static_cast<double>(a.fill_interval / kSecond);
    }
    action = a;
    has = true;
    expiry = now + a.ttl / kSecond * kSecond;
  }
  bool admit(Micros now) {
    if (has && now >= expiry) has = false;  // expired: the bucket reverts to deny
    bool ok = false;
    if (has && action.strategy == QuotaStrategy::kAllowAll) ok = true;
    if (has && action.strategy == QuotaStrategy::kTokenBucket) {
      tokens = std::min<double>(action.max_tokens,
                                tokens + per_second * static_cast<double>(now - refilled) / 1e6);
      refilled = now;
      if (tokens >= 1) {
        tokens -= 1;
        ok = true;
      }
    }
    (ok ? allowed : denied) += 1;
    admitted += ok ? 1 : 0;
    return ok;
  }
};

struct QeFleet {
  QuotaFixture& f;
  std::vector<std::unique_ptr<QeEnvoy>> envoys;
  std::string bucket;

  void report(QeEnvoy& e, Micros now) {
    const Micros elapsed = (now - e.last_report) / kSecond * kSecond;  // whole seconds
    if (e.created && e.has && now >= e.expiry) ++e.expired_before_report;
    auto got = f.report(e.stream, e.created ? "" : "q",
                        {usage(bucket, e.created ? elapsed : 0, e.allowed, e.denied)});
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->size(), 1u);
    e.allowed = e.denied = 0;
    e.last_report = now;
    e.receive((*got)[0], now);
  }
  // `demand[i]` requests per 100 ms from Envoy i, for `seconds`; with `every`, Envoy i sends
  // demand[i] × every[i] requests at once every every[i] ticks (the same rate, in bursts).
  void run(const std::vector<int>& demand, int seconds, const std::vector<int>& every = {}) {
    const Micros step = kSecond / 10;
    for (int tick = 0; tick < seconds * 10; ++tick) {
      const Micros now = f.clock->now();
      for (std::size_t i = 0; i < envoys.size(); ++i) {
        QeEnvoy& e = *envoys[i];
        const int burst = every.empty() ? 1 : every[i];
        const int sent = tick % burst == 0 ? demand[i] * burst : 0;
        for (int r = 0; r < sent; ++r) {
          e.admit(now);
          if (!e.created) {  // the first request creates the bucket and reports it at once
            report(e, now);
            e.created = true;
            e.next_report = now + e.interval;
          }
        }
        if (e.created && now >= e.next_report) {
          report(e, now);
          e.next_report += e.interval;
        }
      }
      f.clock->advance(step);
    }
  }
  std::uint64_t admitted() const {
    std::uint64_t sum = 0;
    for (const auto& e : envoys) sum += e->admitted;
    return sum;
  }
};

TEST(QuotaEngine, WhatSimulatedEnvoysEnforceStaysWithinTheBound) {
  // 600/min token bucket (B = 600, 10/s); three Envoys over-demanding it (50/s each), reporting
  // every 1 s, 300 ms and 70 s. Whatever they enforce, by Envoy's own reading, stays within
  // B + (D + ttl) x L/P over the D = 600 s run.
  QuotaFixture f;
  QeFleet fleet{f, {}, "shared"};
  for (Micros every : {kSecond, 3 * kSecond / 10, 70 * kSecond}) {
    fleet.envoys.push_back(std::make_unique<QeEnvoy>(f.service, every));
  }
  fleet.run({5, 5, 5}, 600);
  const std::uint64_t bound = 600 + (600 + 105) * 10;  // the longest ttl: 1.5 x 70 s
  EXPECT_LE(fleet.admitted(), bound);
  for (const auto& e : fleet.envoys) {
    EXPECT_LE(e->expired_before_report, 1) << "only the first (60 s) ttl may end before a report";
    EXPECT_GT(e->admitted, 0u);
  }
}

TEST(QuotaEngine, EnvoysShareALimitMaxMinFairAndUseMostOfIt) {
  // 2400/min (40/s). Three Envoys ask 10/s, 20/s and 50/s: max-min, 10/s for the first and 15/s
  // for each of the others. A bucket within a tenth of its share is kept (a change costs a new
  // bucket), so the tolerance is 10 % below the max-min share.
  QuotaFixture f;
  QeFleet fleet{f, {}, "fair"};
  for (Micros every : {kSecond, 3 * kSecond / 10, 2 * kSecond}) {
    fleet.envoys.push_back(std::make_unique<QeEnvoy>(f.service, every));
  }
  fleet.run({1, 2, 5}, 60);  // warm up: demands learnt, buckets settled
  std::vector<std::uint64_t> before;
  for (const auto& e : fleet.envoys) before.push_back(e->admitted);
  fleet.run({1, 2, 5}, 300);
  const std::vector<double> share = {10, 15, 15};
  double total = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const double rate = static_cast<double>(fleet.envoys[i]->admitted - before[i]) / 300;
    total += rate;
    EXPECT_GE(rate, 0.9 * share[i]) << "Envoy " << i << " got " << rate << "/s";
  }
  EXPECT_GE(total, 0.9 * 40) << "the limit used under over-demand";
  EXPECT_LE(total, (2400.0 + (300 + 4) * 40) / 300) << "within the bound over the window";
}

TEST(QuotaEngine, EnvoysReportingEveryQuarterSecondAreNotResizedOnCountingNoise) {
  // The demands of the test above on 40/s (F = 1 s), every Envoy reporting every 250 ms; the
  // first sends its 10/s as 2 requests every 200 ms, so one report alone reads 6.7, 10 or 13.3/s.
  // Measured over 1 s of reports the demands are steady, and extending a bucket pays its refill
  // rounded up once, not a token more per report: once settled, no Envoy is given a new bucket
  // (each costs the shared key a full one, never given back while others charge it), and the
  // shares hold.
  QuotaFixture f;
  QeFleet fleet{f, {}, "per_second"};
  for (int i = 0; i < 3; ++i) {
    fleet.envoys.push_back(std::make_unique<QeEnvoy>(f.service, kSecond / 4));
  }
  fleet.run({1, 2, 5}, 10, {2, 1, 1});
  std::vector<std::uint64_t> before;
  std::vector<int> started;
  for (const auto& e : fleet.envoys) {
    before.push_back(e->admitted);
    started.push_back(e->new_buckets);
  }
  fleet.run({1, 2, 5}, 60, {2, 1, 1});
  const std::vector<double> share = {10, 15, 15};
  for (std::size_t i = 0; i < 3; ++i) {
    const QeEnvoy& e = *fleet.envoys[i];
    EXPECT_EQ(e.new_buckets - started[i], 0) << "Envoy " << i << " was resized";
    const double rate = static_cast<double>(e.admitted - before[i]) / 60;
    EXPECT_GE(rate, 0.9 * share[i]) << "Envoy " << i << " got " << rate << "/s";
  }
}

TEST(QuotaEngine, AnIdleBucketIsAbandonedAndItsShareFreed) {
  QuotaFixture f;
  QuotaStream quiet(f.service);
  QuotaStream busy(f.service);
  ASSERT_TRUE(f.report(quiet, "q", {usage("fair", kSecond, 60)}).has_value());
  auto first = f.report(busy, "q", {usage("fair", kSecond, 60)});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0].tokens_per_fill, 1200u) << "half of 2400/min each";
  EXPECT_EQ(f.service.stats().get("q", "name_fair", QuotaStats::kHolders), 2);
  std::optional<QuotaAssignment> last;
  for (int i = 0; i < 12; ++i) {
    f.clock->advance(kSecond);
    auto idle = f.report(quiet, "", {usage("fair", kSecond, 0)});
    ASSERT_TRUE(idle.has_value());
    last = (*idle)[0];
    if (last->strategy == QuotaStrategy::kAbandon) break;
  }
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->strategy, QuotaStrategy::kAbandon) << "3 reports and 10 s without requests";
  EXPECT_EQ(f.service.stats().get("q", "name_fair", QuotaStats::kHolders), 1);
  f.clock->advance(kSecond);
  auto alone = f.report(busy, "", {usage("fair", 11 * kSecond, 660)});  // 60/s still
  ASSERT_TRUE(alone.has_value());
  EXPECT_GT((*alone)[0].tokens_per_fill, 1200u) << "the share came back to the one left";
}

TEST(QuotaEngine, WhatAReplacedBucketDidNotUseIsGivenBack) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  // 1000/min fixed window: a refund is possible while the charge's window counts.
  auto first = f.report(stream, "q", {usage("window", kSecond, 100)});
  ASSERT_TRUE(first.has_value());
  const std::int64_t charged = qe_new_cost((*first)[0]);
  EXPECT_EQ(f.left("window"), 1000 - charged);
  // A second later the Envoy saw 5 requests, all allowed: a much smaller bucket replaces it.
  f.clock->advance(kSecond);
  auto second = f.report(stream, "", {usage("window", kSecond, 5)});
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ((*second)[0].strategy, QuotaStrategy::kTokenBucket);
  EXPECT_LT((*second)[0].tokens_per_fill, (*first)[0].tokens_per_fill);
  // The first bucket's charge is settled at the 5 it used; the new one is charged in full.
  EXPECT_EQ(f.left("window"), 1000 - 5 - qe_new_cost((*second)[0]));
  EXPECT_EQ(f.service.stats().get("q", "name_window", QuotaStats::kRefunded), charged - 5);
  EXPECT_EQ(f.service.stats().get("q", "name_window", QuotaStats::kUsed), 105);
  std::string text;
  f.service.stats().render(text);
  EXPECT_NE(text.find("spillway_rlqs_tokens_total{domain=\"q\",bucket=\"name_window\",kind="
                      "\"refunded\"} " +
                      std::to_string(charged - 5)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spillway_rlqs_envoys{domain=\"q\",bucket=\"name_window\"} 1"),
            std::string::npos)
      << text;
}

TEST(QuotaEngine, BadReportsAreRefusedNamingWhatWasWrong) {
  QuotaFixture f;
  struct Case {
    std::string domain;
    std::vector<QuotaUsage> usages;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", {usage("window", kSecond, 1)}, "must name its domain"},
      {"q", {}, "at least one bucket"},
      {"q", {QuotaUsage{.elapsed = kSecond}}, "bucket_quota_usages[0].bucket_id"},
      {"q", {usage("", kSecond, 1)}, "empty key or value"},
      {"q", {usage("window", kSecond, 1), usage("free", -1, 1)}, "[1].time_elapsed"},
      {"q", std::vector<QuotaUsage>(kMaxQuotaBuckets + 1, usage("free", kSecond, 1)), "at most"},
  };
  for (const Case& c : cases) {
    QuotaStream stream(f.service);
    auto answered = f.report(stream, c.domain, c.usages);
    ASSERT_FALSE(answered.has_value()) << c.says;
    EXPECT_EQ(answered.error().code, Errc::kInvalidArgument);
    EXPECT_NE(answered.error().message.find(c.says), std::string::npos) << answered.error().message;
  }
  EXPECT_EQ(f.left("window"), 1000) << "nothing charged";
  QuotaStream stream(f.service);
  ASSERT_TRUE(f.report(stream, "q", {usage("free", kSecond, 1)}).has_value());
  auto moved = f.report(stream, "other", {usage("free", kSecond, 1)});
  ASSERT_FALSE(moved.has_value());
  EXPECT_NE(moved.error().message.find("cannot change it"), std::string::npos);
}

}  // namespace
}  // namespace spillway::rls
