// Quota leases: the pure sizing and horizon functions (spillway/lease.h), LeaseStore over an
// in-process MemoryStore standing in for the shared store (explicit times, so every step is
// exact), and the bound of docs/SPEC.md §2.3 as a property: several LeaseStores share one store,
// random demand, and the admissions they make together are checked against what each algorithm
// allows (per algorithm, as the spec states it). A shared store with latency, on its own thread,
// carries the concurrent test.
#include "spillway/lease_store.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/clock.h"
#include "spillway/memory_store.h"

namespace spillway {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kLeaseStart = 1'000 * kSecond;  // a window start

Limit lease_limit(Algorithm algorithm, std::int64_t limit, Micros period,
                  std::optional<std::int64_t> burst = std::nullopt) {
  Result<Limit> made = Limit::make(algorithm, limit, period, burst);
  EXPECT_TRUE(made.has_value()) << made.error().message;
  return *made;
}

// Passes everything to a store it does not own (several LeaseStores share one), counting calls.
class SharedStore final : public Store {
 public:
  explicit SharedStore(Store& shared) : shared_(shared) {}
  void decide(const StoreRequest& request, AllCallback done) override {
    if (fail.load()) {
      return done(std::unexpected(Error{Errc::kUnavailable, "shared store down (test)"}));
    }
    ++(request.operation() == Operation::kReserve ? reserves : others);
    shared_.decide(request, std::move(done));
  }
  void settle(const Settlement& settlement, SettleCallback done) override {
    if (fail.load()) {
      return done(std::unexpected(Error{Errc::kUnavailable, "shared store down (test)"}));
    }
    ++settles;
    shared_.settle(settlement, std::move(done));
  }
  bool decides_inline() const override { return shared_.decides_inline(); }

  std::atomic<int> reserves{0};
  std::atomic<int> settles{0};
  std::atomic<int> others{0};
  std::atomic<bool> fail{false};

 private:
  Store& shared_;
};

// One process's LeaseStore over the shared store, with explicit times.
struct Instance {
  Instance(Store& shared, std::shared_ptr<ManualClock> clock) {
    auto forward = std::make_unique<SharedStore>(shared);
    calls = forward.get();
    store = std::make_unique<LeaseStore>(
        std::move(forward), LeaseStoreOptions{.clock = std::move(clock),
                                              .sweep_interval = std::chrono::milliseconds(0)});
  }
  Result<Decisions> check(std::span<const KeyedLimit> checks, std::int64_t cost, Micros now) {
    return store->check_all(checks, cost, now);
  }
  Decision one(std::string_view key, const Limit& limit, const LeaseSpec& lease, Micros now,
               std::int64_t cost = 1) {
    const KeyedLimit k[] = {{key, &limit, kRequestCost, &lease}};
    Result<Decisions> d = check(k, cost, now);
    EXPECT_TRUE(d.has_value()) << d.error().message;
    return d ? d->front() : Decision{};
  }
  SharedStore* calls = nullptr;
  std::unique_ptr<LeaseStore> store;
};

struct LeaseFixture {
  LeaseFixture() : clock(std::make_shared<ManualClock>(kLeaseStart)) {}
  std::shared_ptr<ManualClock> clock;
  MemoryStore shared{MemoryStoreOptions{.clock = clock}};
  Decision peek(std::string_view key, const Limit& limit, Micros now) {
    Result<Decision> d = shared.check(key, limit, 0, now);
    EXPECT_TRUE(d.has_value());
    return d ? *d : Decision{};
  }
};

// ---------------------------------------------------------------------------------------------
// The pure functions.

TEST(LeaseMath, TheCapIsTheShareOfTheLimitOrOfASmallerBurst) {
  const LeaseSpec ten{.max_age = 100'000, .max_share_permille = 100};
  EXPECT_EQ(lease_cap(lease_limit(Algorithm::kGcra, 1000, kSecond), ten), 100);
  EXPECT_EQ(lease_cap(lease_limit(Algorithm::kGcra, 1000, kSecond, 50), ten), 5);
  EXPECT_EQ(lease_cap(lease_limit(Algorithm::kFixedWindow, 5, kSecond), ten), 1) << "at least 1";
  const LeaseSpec all{.max_age = 100'000, .max_share_permille = 1000};
  EXPECT_EQ(lease_cap(lease_limit(Algorithm::kSlidingLog, 7, kSecond), all), 7);
}

TEST(LeaseMath, TheSizeFollowsDemandBetweenTheNeedAndTheCap) {
  const Limit limit = lease_limit(Algorithm::kGcra, 10'000, kSecond);  // cap 1000 at 10 %
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 100};
  EXPECT_EQ(lease_size(limit, spec, 1, 0, 0), 1) << "no history: just the need";
  EXPECT_EQ(lease_size(limit, spec, 3, 0, 50'000), 3);
  // 20 units over 10 ms is 2,000/s: 200 over 100 ms.
  EXPECT_EQ(lease_size(limit, spec, 1, 20, 10'000), 200);
  // 21 units over 10 ms: 210 (rounded up, never down).
  EXPECT_EQ(lease_size(limit, spec, 1, 21, 10'000), 210);
  EXPECT_EQ(lease_size(limit, spec, 1, 5'000, 10'000), 1000) << "capped";
  EXPECT_EQ(lease_size(limit, spec, 1, 5, 0), 1000) << "all at once: the cap";
  EXPECT_EQ(lease_size(limit, spec, 1500, 20, 10'000), 1500) << "a request is never split";
  EXPECT_EQ(lease_size(limit, spec, 300, 20, 10'000), 300);
}

TEST(LeaseMath, AWindowLeaseEndsWithTheWindowItWasChargedIn) {
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 100};
  MemoryStore store;
  for (Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingWindow}) {
    SCOPED_TRACE(std::string(algorithm_name(algorithm)));
    const Limit limit = lease_limit(algorithm, 100, kSecond);
    const std::string key = "horizon-" + std::string(algorithm_name(algorithm));
    // Charged 30 ms before the window's end: the lease ends with the window.
    const Micros at = kLeaseStart + kSecond - 30'000;
    Result<Decision> charged = store.check(key, limit, 10, at);
    ASSERT_TRUE(charged && charged->allowed);
    EXPECT_EQ(lease_horizon(limit, spec, *charged), 30'000);
    // Early in a window: max_age.
    Result<Decision> early = store.check(key, limit, 10, kLeaseStart + 2 * kSecond + 1'000);
    ASSERT_TRUE(early && early->allowed);
    EXPECT_EQ(lease_horizon(limit, spec, *early), 100'000);
  }
  for (Algorithm algorithm : {Algorithm::kSlidingLog, Algorithm::kTokenBucket, Algorithm::kGcra}) {
    const Limit limit = lease_limit(algorithm, 100, kSecond);
    Result<Decision> charged =
        store.check("horizon-other", limit, 10, kLeaseStart + kSecond - 30'000);
    ASSERT_TRUE(charged && charged->allowed);
    EXPECT_EQ(lease_horizon(limit, spec, *charged), 100'000) << algorithm_name(algorithm);
  }
}

TEST(LeaseMath, BadSpecsNameTheirField) {
  auto problem = lease_spec_problem({.max_age = 999, .max_share_permille = 100});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->field, "max_age");
  EXPECT_NE(problem->message.find("1ms"), std::string::npos) << problem->message;
  problem = lease_spec_problem({.max_age = 100'000, .max_share_permille = 0});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->field, "max_share");
  problem = lease_spec_problem({.max_age = 100'000, .max_share_permille = 1001});
  ASSERT_TRUE(problem);
  EXPECT_FALSE(lease_spec_problem({}));
}

// ---------------------------------------------------------------------------------------------
// One LeaseStore.

TEST(LeaseStore, ChecksAreDecidedFromLeasesWithFewCallsAndNothingOverTheLimit) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kGcra, 10'000, kSecond);  // cap 1,000
  const LeaseSpec spec{};
  int admitted = 0;
  // 20,000 checks at 20,000/s for one second: twice the limit.
  for (int i = 0; i < 20'000; ++i) {
    admitted += a.one("busy", limit, spec, kLeaseStart + i * 50).allowed ? 1 : 0;
  }
  // GCRA of 10,000/s with burst 10,000 admits at most 10,000 + 10,000 in the second.
  EXPECT_LE(admitted, 20'000);
  EXPECT_GE(admitted, 19'000) << "one process alone leaves little stranded";
  const int calls = a.calls->reserves.load() + a.calls->settles.load();
  EXPECT_LT(calls * 100, 20'000) << "fewer than one shared call per 100 checks: " << calls;
  // What the shared key was charged covers what was admitted.
  const LeaseStore::Counts c = a.store->counts();
  EXPECT_EQ(c.used, admitted);
  EXPECT_GE(c.local_decisions, 19'000u);
}

TEST(LeaseStore, TheFirstLeaseIsTheRequestsOwnCostAndLeasesGrowWithDemand) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 1'000, kSecond);
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 100};
  EXPECT_TRUE(a.one("grow", limit, spec, kLeaseStart + 1'000).allowed);
  EXPECT_EQ(f.peek("grow", limit, kLeaseStart + 1'000).remaining, 999) << "1 unit charged, no more";
  // 1 unit over 1 ms: 100 over max_age (the cap is 100).
  EXPECT_TRUE(a.one("grow", limit, spec, kLeaseStart + 2'000).allowed);
  EXPECT_EQ(f.peek("grow", limit, kLeaseStart + 2'000).remaining, 899);
  EXPECT_EQ(a.store->counts().held, 99);
  EXPECT_EQ(a.calls->reserves.load(), 2);
}

TEST(LeaseStore, AnIdleLeaseIsGivenBackAndForgotten) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 1'000, kSecond);
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 100};
  ASSERT_TRUE(a.one("idle", limit, spec, kLeaseStart + 1'000).allowed);
  ASSERT_TRUE(a.one("idle", limit, spec, kLeaseStart + 2'000).allowed);  // a lease of 100
  ASSERT_TRUE(a.one("idle", limit, spec, kLeaseStart + 3'000).allowed);
  EXPECT_EQ(a.store->counts().held, 98);
  a.store->sweep(kLeaseStart + 50'000);
  EXPECT_EQ(a.store->counts().held, 98) << "not over yet";
  a.store->sweep(kLeaseStart + 102'000);
  const LeaseStore::Counts c = a.store->counts();
  EXPECT_EQ(c.held, 0);
  EXPECT_EQ(c.returned, 98) << "a fixed window gives back in the same window";
  EXPECT_EQ(c.lost, 0);
  EXPECT_EQ(c.used, 3);
  EXPECT_EQ(f.peek("idle", limit, kLeaseStart + 102'000).remaining, 997) << "3 admitted, 3 charged";
}

TEST(LeaseStore, AFixedWindowLeaseNeverCrossesItsWindowsEnd) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 100, kSecond);
  const LeaseSpec spec{.max_age = 500'000, .max_share_permille = 1000};
  const Micros late = kLeaseStart + kSecond - 10'000;
  ASSERT_TRUE(a.one("edge", limit, spec, late).allowed);
  ASSERT_TRUE(a.one("edge", limit, spec, late + 1).allowed);  // a big lease, 10 ms left in it
  EXPECT_GT(a.store->counts().held, 10);
  const int reserves = a.calls->reserves.load();
  // The next window: the old lease is over, a new one is charged in the new window.
  ASSERT_TRUE(a.one("edge", limit, spec, kLeaseStart + kSecond + 5).allowed);
  EXPECT_EQ(a.calls->reserves.load(), reserves + 1);
  EXPECT_LT(f.peek("edge", limit, kLeaseStart + kSecond + 5).remaining, 100)
      << "charged in the new window";
}

TEST(LeaseStore, AllOrNothingWithAnExactLayerThatDenies) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit leased = lease_limit(Algorithm::kGcra, 1'000, kSecond);
  const Limit exact = lease_limit(Algorithm::kFixedWindow, 2, kSecond);
  const LeaseSpec spec{};
  const KeyedLimit both[] = {{"aon-leased", &leased, kRequestCost, &spec},
                             {"aon-exact", &exact, kRequestCost, nullptr}};
  for (int i = 0; i < 2; ++i) {
    Result<Decisions> d = a.check(both, 1, kLeaseStart + 1'000 * (i + 1));
    ASSERT_TRUE(d);
    EXPECT_TRUE(all_allowed(*d));
  }
  const std::int64_t used = a.store->counts().used;
  const std::int64_t held = a.store->counts().held;
  Result<Decisions> denied = a.check(both, 1, kLeaseStart + 3'000);
  ASSERT_TRUE(denied);
  EXPECT_FALSE(all_allowed(*denied));
  EXPECT_TRUE((*denied)[0].allowed) << "the leased layer admitted, and gave its unit back";
  EXPECT_FALSE((*denied)[1].allowed);
  EXPECT_EQ(a.store->counts().used, used);
  EXPECT_EQ(a.store->counts().held, held) << "the taken unit is back in the lease";
}

TEST(LeaseStore, AllOrNothingAcrossTwoLeasedLayers) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit wide = lease_limit(Algorithm::kFixedWindow, 1'000, kSecond);
  const Limit narrow = lease_limit(Algorithm::kFixedWindow, 3, kSecond);
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 1000};
  const KeyedLimit both[] = {{"two-wide", &wide, kRequestCost, &spec},
                             {"two-narrow", &narrow, kRequestCost, &spec}};
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    Result<Decisions> d = a.check(both, 1, kLeaseStart + 1'000 + i);
    ASSERT_TRUE(d) << d.error().message;
    admitted += all_allowed(*d) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 3);
  a.store->release_all();
  EXPECT_EQ(f.peek("two-wide", wide, kLeaseStart + 2'000).remaining, 997)
      << "the wide layer is charged only for the admitted requests once leases are given back";
  EXPECT_EQ(f.peek("two-narrow", narrow, kLeaseStart + 2'000).remaining, 0);
}

TEST(LeaseStore, ASharedDenialIsRememberedUntilItsRetryAfter) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  Instance b(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 10, kSecond);
  const LeaseSpec spec{.max_age = 900'000, .max_share_permille = 1000};
  // b takes everything.
  ASSERT_TRUE(b.one("denied", limit, spec, kLeaseStart + 1).allowed);
  for (int i = 0; i < 9; ++i)
    ASSERT_TRUE(b.one("denied", limit, spec, kLeaseStart + 2 + i).allowed);
  const Decision first = a.one("denied", limit, spec, kLeaseStart + 100'000);
  EXPECT_FALSE(first.allowed);
  EXPECT_EQ(first.retry_after, kSecond - 100'000);
  const int calls = a.calls->reserves.load();
  const Decision again = a.one("denied", limit, spec, kLeaseStart + 400'000);
  EXPECT_FALSE(again.allowed);
  EXPECT_TRUE(again.local);
  EXPECT_EQ(again.retry_after, kSecond - 400'000);
  EXPECT_EQ(a.calls->reserves.load(), calls) << "no round trip for a known denial";
  EXPECT_TRUE(a.one("denied", limit, spec, kLeaseStart + kSecond).allowed) << "the next window";
}

TEST(LeaseStore, ACostAboveTheLimitIsNeverAdmittedAndSaysSo) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kGcra, 10, kSecond);
  const LeaseSpec spec{};
  const Decision d = a.one("huge", limit, spec, kLeaseStart, 11);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, kNever);
  EXPECT_EQ(a.one("huge", limit, spec, kLeaseStart + 1, 11).retry_after, kNever);
  EXPECT_TRUE(a.one("huge", limit, spec, kLeaseStart + 2, 1).allowed);
}

TEST(LeaseStore, WhenTheSharedStoreFailsHeldLeasesDecideUntilTheyEndThenTheErrorComes) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kGcra, 10'000, kSecond);
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 100};
  ASSERT_TRUE(a.one("fault", limit, spec, kLeaseStart).allowed);
  ASSERT_TRUE(
      a.one("fault", limit, spec, kLeaseStart + 100).allowed);  // a lease of the cap (1,000)
  a.calls->fail = true;
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(a.one("fault", limit, spec, kLeaseStart + 200 + i).allowed) << i;
  }
  const KeyedLimit k[] = {{"fault", &limit, kRequestCost, &spec}};
  Result<Decisions> after = a.check(k, 1, kLeaseStart + 100 + 100'000);
  ASSERT_FALSE(after.has_value()) << "the lease is over: a new one needs the shared store";
  EXPECT_EQ(after.error().code, Errc::kUnavailable);
  // Giving back while the store is down loses the leftover (it stays charged: never admitted).
  a.store->sweep(kLeaseStart + 300'000);
  const LeaseStore::Counts c = a.store->counts();
  EXPECT_EQ(c.held, 0);
  EXPECT_GT(c.lost, 0);
  a.calls->fail = false;
  EXPECT_TRUE(a.one("fault", limit, spec, kLeaseStart + 400'000).allowed) << "and it recovers";
}

// An instance that dies with a lease (here: its last calls fail, so nothing is given back) strands
// its units: they stay charged, nobody else is credited them, and the next window is whole again.
TEST(LeaseStore, AnInstanceKilledWithALeaseStrandsItsUnitsAndNoOneOverAdmits) {
  LeaseFixture f;
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 100, kSecond);
  const LeaseSpec spec{.max_age = 500'000, .max_share_permille = 500};  // leases of up to 50
  auto a = std::make_unique<Instance>(f.shared, f.clock);
  ASSERT_TRUE(a->one("killed", limit, spec, kLeaseStart + 1).allowed);
  ASSERT_TRUE(a->one("killed", limit, spec, kLeaseStart + 2).allowed);  // a lease of 50, 1 used
  const std::int64_t stranded = a->store->counts().held;
  EXPECT_EQ(stranded, 49);
  a->calls->fail = true;  // dead: its lease is never returned
  a.reset();
  Instance b(f.shared, f.clock);
  int admitted = 0;
  for (int i = 0; i < 200; ++i)
    admitted += b.one("killed", limit, spec, kLeaseStart + 10 + i).allowed;
  EXPECT_EQ(admitted, 100 - 2 - stranded) << "the dead instance's units stay charged";
  int next = 0;
  for (int i = 0; i < 200; ++i)
    next += b.one("killed", limit, spec, kLeaseStart + kSecond + i).allowed;
  EXPECT_EQ(next, 100) << "and strand nothing past their window";
}

TEST(LeaseStore, ANonLeasedRequestAndAPeekGoStraightToTheSharedStore) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kGcra, 10, kSecond);
  Result<Decision> d = a.store->check("plain", limit, 1, kLeaseStart);
  ASSERT_TRUE(d && d->allowed);
  EXPECT_FALSE(d->local);
  EXPECT_EQ(d->remaining, 9);
  const LeaseSpec spec{};
  const Decision peek = a.one("plain", limit, spec, kLeaseStart, 0);
  EXPECT_EQ(peek.remaining, 9);
  EXPECT_EQ(a.calls->reserves.load(), 0);
  EXPECT_EQ(a.calls->others.load(), 2);
}

TEST(LeaseStore, ALimitKeepingAReserveForHigherPrioritiesIsDecidedExactly) {
  // What the other priorities left is only known to the shared state: no lease, every check
  // exact, and the reserve holds (10 with 4 kept: the 7th sheddable request is denied).
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit plain = lease_limit(Algorithm::kGcra, 10, kSecond);
  const Limit lower = *plain.with_reserved(4);
  const LeaseSpec spec{};
  for (int i = 0; i < 6; ++i) {
    const Decision d = a.one("shared", lower, spec, kLeaseStart);
    EXPECT_TRUE(d.allowed) << i;
    EXPECT_FALSE(d.local) << i;
  }
  EXPECT_FALSE(a.one("shared", lower, spec, kLeaseStart).allowed);
  EXPECT_EQ(a.calls->reserves.load(), 0) << "no lease was taken";
  EXPECT_EQ(a.calls->others.load(), 7);
  EXPECT_EQ(f.peek("shared", plain, kLeaseStart).remaining, 4) << "the reserve is left";
}

TEST(LeaseStore, AResetEndsTheLeaseWithoutGivingItBack) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 100, kSecond);
  const LeaseSpec spec{.max_age = 100'000, .max_share_permille = 500};
  ASSERT_TRUE(a.one("reset", limit, spec, kLeaseStart + 1).allowed);
  ASSERT_TRUE(a.one("reset", limit, spec, kLeaseStart + 2).allowed);
  EXPECT_GT(a.store->counts().held, 0);
  const KeyedLimit k[] = {{"reset", &limit}};
  auto request = StoreRequest::make(k, 1, kLeaseStart + 3, Operation::kReset);
  ASSERT_TRUE(request);
  ASSERT_TRUE(a.store->decide_and_wait(*request));
  EXPECT_EQ(a.store->counts().held, 0);
  EXPECT_EQ(f.peek("reset", limit, kLeaseStart + 3).remaining, 100);
  ASSERT_TRUE(a.one("reset", limit, spec, kLeaseStart + 4).allowed);
  EXPECT_EQ(f.peek("reset", limit, kLeaseStart + 4).remaining, 99) << "a fresh lease of 1";
}

TEST(LeaseStore, MetricsNameEveryState) {
  LeaseFixture f;
  Instance a(f.shared, f.clock);
  const Limit limit = lease_limit(Algorithm::kGcra, 1'000, kSecond);
  const LeaseSpec spec{};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.one("m", limit, spec, kLeaseStart + i * 1'000).allowed);
  std::string out;
  a.store->append_metrics(out);
  for (const char* line :
       {"spillway_lease_units{state=\"used\"} 5\n", "spillway_lease_units{state=\"returned\"} 0\n",
        "spillway_lease_units{state=\"lost\"} 0\n", "spillway_lease_calls_total{call=\"acquire\"} ",
        "spillway_lease_local_decisions_total "}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  const LeaseStore::Counts c = a.store->counts();
  EXPECT_NE(out.find("spillway_lease_units{state=\"held\"} " + std::to_string(c.held) + "\n"),
            std::string::npos)
      << out;
}

// ---------------------------------------------------------------------------------------------
// The bound (docs/SPEC.md §2.3), as a property over random demand on several instances.

struct Admission {
  Micros at;
  std::int64_t units;
};

// Units admitted in (from, to].
std::int64_t admitted_in(const std::vector<Admission>& log, Micros from, Micros to) {
  std::int64_t sum = 0;
  for (const Admission& a : log) {
    if (a.at > from && a.at <= to) sum += a.units;
  }
  return sum;
}

void bound_property(Algorithm algorithm) {
  const std::int64_t limit_n = *rc::gen::inRange<std::int64_t>(5, 60);
  const Micros period = kSecond;
  const Micros max_age = *rc::gen::element<Micros>(20'000, 100'000, 400'000);
  const std::int64_t share = *rc::gen::element<std::int64_t>(100, 300, 1000);
  const int instances = *rc::gen::inRange(1, 5);
  const std::optional<std::int64_t> burst =
      takes_burst(algorithm) ? std::optional<std::int64_t>(*rc::gen::inRange<std::int64_t>(1, 60))
                             : std::nullopt;
  const Limit limit = lease_limit(algorithm, limit_n, period, burst);
  const LeaseSpec spec{.max_age = max_age, .max_share_permille = share};
  const std::int64_t cap = lease_cap(limit, spec);

  auto clock = std::make_shared<ManualClock>(kLeaseStart);
  MemoryStore shared(MemoryStoreOptions{.clock = clock});
  std::vector<std::unique_ptr<Instance>> fleet;
  for (int i = 0; i < instances; ++i) fleet.push_back(std::make_unique<Instance>(shared, clock));

  std::vector<Admission> log;
  Micros now = kLeaseStart + *rc::gen::inRange<Micros>(0, period);
  const int steps = *rc::gen::inRange(50, 400);
  for (int s = 0; s < steps; ++s) {
    now += *rc::gen::element<Micros>(0, 1, 997, 10'000, 50'000, 250'000);
    const int who = *rc::gen::inRange(0, instances);
    const int what = *rc::gen::inRange(0, 20);
    if (what == 0) {
      fleet[who]->store->sweep(now);
      continue;
    }
    const std::int64_t cost = *rc::gen::element<std::int64_t>(1, 1, 1, 2, 3);
    const KeyedLimit k[] = {{"bound", &limit, kRequestCost, &spec}};
    Result<Decisions> d = fleet[who]->check(k, cost, now);
    RC_ASSERT(d.has_value());
    if (d->front().allowed) log.push_back({now, cost});
  }

  // What every algorithm promises, checked at every admission (the log is in time order).
  for (const Admission& a : log) {
    const Micros t = a.at;
    switch (algorithm) {
      case Algorithm::kFixedWindow: {
        // Exact: a lease never outlives its window.
        const Micros start = (t / period) * period;
        RC_ASSERT(admitted_in(log, start - 1, start + period - 1) <= limit_n);
        break;
      }
      case Algorithm::kSlidingWindow: {
        // Exact: the algorithm's own estimate over what was admitted stays within L.
        const Micros start = (t / period) * period;
        const std::int64_t previous = admitted_in(log, start - period - 1, start - 1);
        const std::int64_t current = admitted_in(log, start - 1, t);
        RC_ASSERT(previous * (period - (t - start)) + current * period <= limit_n * period);
        break;
      }
      case Algorithm::kSlidingLog: {
        // At most L plus what leases held at the period's start: at most the instances' caps.
        const std::int64_t held_max = std::min<std::int64_t>(instances * cap, limit_n);
        RC_ASSERT(admitted_in(log, t - period, t) <= limit_n + held_max);
        break;
      }
      case Algorithm::kTokenBucket:
      case Algorithm::kGcra: {
        // Units admitted in (t - D, t] were charged in (t - D - max_age, t]: at most
        // B + (D + max_age) L / P of them, for every D.
        for (const Admission& b : log) {
          if (b.at > t) break;
          const Micros span = t - b.at;  // the window [b.at, t]
          const std::int64_t got = admitted_in(log, b.at - 1, t);
          // (span + max_age) stays below 2^31 µs here: the product fits.
          const std::int64_t most = limit.burst() + (span + max_age) * limit_n / period;
          RC_ASSERT(got <= most);
        }
        break;
      }
    }
  }
  // Nothing is held once every lease is given back, and units add up.
  std::int64_t used = 0;
  for (auto& instance : fleet) {
    instance->store->release_all();
    const LeaseStore::Counts c = instance->store->counts();
    RC_ASSERT(c.held == 0);
    used += c.used;
  }
  std::int64_t logged = 0;
  for (const Admission& a : log) logged += a.units;
  RC_ASSERT(used == logged);
}

TEST(LeaseBound, InstancesTogetherStayWithinEachAlgorithmsBound) {
  for (Algorithm algorithm : kAlgorithms) {
    const std::string name = "lease bound, " + std::string(algorithm_name(algorithm));
    EXPECT_TRUE(rc::check(name, [algorithm] { bound_property(algorithm); })) << name;
  }
}

// ---------------------------------------------------------------------------------------------
// A shared store with latency, answering on its own thread; several instances, several threads.

class SlowStore final : public Store {
 public:
  SlowStore(Store& shared, std::chrono::microseconds latency)
      : shared_(shared), latency_(latency), worker_([this] { run(); }) {}
  ~SlowStore() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void decide(const StoreRequest& request, AllCallback done) override {
    // Decided at once (the shared state is charged now), answered after the latency.
    Result<Decisions> got = shared_.decide_and_wait(request);
    post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
  }
  void settle(const Settlement& settlement, SettleCallback done) override {
    Result<Settled> got = shared_.settle_and_wait(settlement);
    post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
  }

 private:
  void post(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::chrono::steady_clock::now() + latency_, std::move(work)});
    }
    cv_.notify_all();
  }
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      if (queue_.empty()) {
        if (stop_) return;
        cv_.wait(lock);
        continue;
      }
      auto [due, work] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_until(due);  // real time: the latency the other threads race
      work();
      lock.lock();
    }
  }
  Store& shared_;
  std::chrono::microseconds latency_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::function<void()>>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

TEST(LeaseStore, ConcurrentInstancesOverASlowSharedStoreNeverOverAdmit) {
  MemoryStore shared;
  const Limit limit = lease_limit(Algorithm::kFixedWindow, 2'000, 100'000);  // 2,000 per 100 ms
  const LeaseSpec spec{.max_age = 20'000, .max_share_permille = 100};
  constexpr int kInstances = 3;
  constexpr int kThreads = 2;
  std::vector<std::unique_ptr<LeaseStore>> fleet;
  for (int i = 0; i < kInstances; ++i) {
    fleet.push_back(std::make_unique<LeaseStore>(
        std::make_unique<SlowStore>(shared, std::chrono::microseconds(300))));
  }
  std::mutex mutex;
  std::map<Micros, std::int64_t> per_window;  // by the shared clock's window
  SystemClock clock;
  std::vector<std::thread> threads;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  std::atomic<std::int64_t> errors{0};
  for (int i = 0; i < kInstances * kThreads; ++i) {
    threads.emplace_back([&, i] {
      LeaseStore& store = *fleet[i % kInstances];
      const KeyedLimit k[] = {{"slow-shared", &limit, kRequestCost, &spec}};
      while (std::chrono::steady_clock::now() < until) {
        const Micros before = clock.now();
        Result<Decisions> d = store.check_all(k, 1);
        const Micros after = clock.now();
        if (!d) {
          ++errors;
          continue;
        }
        if (!d->front().allowed) continue;
        // Only admissions whose window is certain count (not those that straddle an edge).
        if (before / limit.period() != after / limit.period()) continue;
        std::lock_guard lock(mutex);
        ++per_window[before / limit.period()];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_FALSE(per_window.empty());
  for (const auto& [window, count] : per_window) {
    EXPECT_LE(count, limit.limit()) << "window " << window;
  }
  std::int64_t used = 0;
  for (auto& store : fleet) used += store->counts().used;
  EXPECT_GT(used, 0);
}

}  // namespace
}  // namespace spillway
