// RLQS quota assignments (src/rls/quota_engine.h, docs/SPEC.md §9.7) on an in-process store with a
// manual clock: what each bucket is told, and exactly what each assignment charges the shared
// key (a new bucket: its size plus its refill over the ttl; the same bucket again: the refill
// from where the last charge ended), so the Envoys' admissions are always paid for in advance.
#include "src/rls/quota_engine.h"

#include <gtest/gtest.h>

#include <memory>
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
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
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
  EXPECT_EQ((*answered)[2].ttl, 2 * kSecond) << "twice the report interval";
  EXPECT_EQ((*answered)[0].bucket, (std::vector<RlsEntry>{{"name", "nobody"}}));
  QuotaStream other(f.service);
  auto unknown = f.report(other, "elsewhere", {usage("window", kSecond, 5)});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ((*unknown)[0].strategy, QuotaStrategy::kAllowAll) << "an unknown domain has no limit";
}

TEST(QuotaEngine, AnAssignmentIsChargedBeforeItIsSentAndExtensionsPayTheirRefill) {
  QuotaFixture f;
  QuotaStream stream(f.service);
  // 100 requests in 1 s: 1.25 x 100 x 2 s = 250 wanted, but 1000/min gives 33 in 2 s.
  auto first = f.report(stream, "q", {usage("window", kSecond, 60, 40)});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const QuotaAssignment& a = (*first)[0];
  ASSERT_EQ(a.strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ(a.max_tokens, 33u);
  EXPECT_EQ(a.tokens_per_fill, 33u);
  EXPECT_EQ(a.fill_interval, 2 * kSecond);
  EXPECT_EQ(a.ttl, 2 * kSecond);
  EXPECT_EQ(f.left("window"), 1000 - 66) << "a full bucket and its refill over the ttl";

  // A second later, the same demand: the same bucket, extended by a second (half its refill).
  f.clock->advance(kSecond);
  auto second = f.report(stream, "", {usage("window", kSecond, 100)});
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*second)[0].max_tokens, 33u);
  EXPECT_EQ(f.left("window"), 934 - 17) << "ceil(33 x 1 s / 2 s) for the extension alone";

  // Reports every half second: a 1 s ttl, a new bucket of what 1000/min gives in 1 s (16).
  f.clock->advance(kSecond / 2);
  auto third = f.report(stream, "", {usage("window", kSecond / 2, 50)});
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ((*third)[0].max_tokens, 16u);
  EXPECT_EQ((*third)[0].ttl, kSecond);
  EXPECT_EQ(f.left("window"), 917 - 32);
}

TEST(QuotaEngine, WhenLittleIsLeftTheBucketShrinksThenDenies) {
  QuotaFixture f;
  // Other streams take most of the window first (14 new buckets of 33 + 33).
  for (int i = 0; i < 14; ++i) {
    QuotaStream taker(f.service);
    auto got = f.report(taker, "q", {usage("window", kSecond, 100)});
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ((*got)[0].strategy, QuotaStrategy::kTokenBucket) << i;
  }
  EXPECT_EQ(f.left("window"), 1000 - 14 * 66);  // 76
  QuotaStream late(f.service);
  auto got = f.report(late, "q", {usage("window", kSecond, 100)});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)[0].max_tokens, 33u) << "66 still fit";
  f.clock->advance(kSecond);
  auto smaller = f.report(late, "", {usage("window", kSecond, 1000)});
  ASSERT_TRUE(smaller.has_value());
  // 10 left: the bucket in force extends (ceil(33 x 1 s / 2 s) = 17 > 10: no), so half of 10.
  EXPECT_EQ(f.left("window"), 0);
  EXPECT_EQ((*smaller)[0].strategy, QuotaStrategy::kTokenBucket);
  EXPECT_EQ((*smaller)[0].max_tokens, 5u);
  f.clock->advance(kSecond);
  auto denied = f.report(late, "", {usage("window", kSecond, 1000)});
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ((*denied)[0].strategy, QuotaStrategy::kDenyAll);
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
      {"q", {usage("window", kSecond, 1), usage("window", 0, 1)}, "[1].time_elapsed"},
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
