// The memory store's reservations (usage-based limits, docs/SPEC.md §5.3): a kReserve request
// charges its estimates all-or-nothing and keeps them; Store::settle settles them exactly once,
// even when threads race; bad settlements are refused and change nothing; reservations expire.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "spillway/clock.h"
#include "spillway/memory_store.h"

namespace spillway {
namespace {

const Limit kRequests = *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour);
const Limit kTokens = *Limit::make(Algorithm::kSlidingLog, 1'000, kMicrosPerHour);
constexpr Micros kReservationTestNow = 5 * kMicrosPerHour;  // a window's start

struct MemoryReservationFixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(kReservationTestNow);
  MemoryStore store{{.clock = clock}};

  // Reserves `tokens` on the two layers (rpm: 1, metered tpm: `tokens`); the id, or "" if denied.
  std::string reserve(std::int64_t tokens,
                      std::chrono::milliseconds ttl = std::chrono::minutes(1)) {
    const std::string id = new_reservation_id();
    const KeyedLimit keys[] = {{"rpm", &kRequests}, {"tpm", &kTokens, tokens}};
    const ReservedLayer layers[] = {{"rpm", false}, {"tpm", true}};
    const ReserveSpec spec{.id = id, .ttl = ttl, .layers = layers};
    auto request = StoreRequest::make_reserve(keys, 1, std::nullopt, spec);
    EXPECT_TRUE(request.has_value()) << request.error().message;
    auto decisions = store.decide_and_wait(*request);
    EXPECT_TRUE(decisions.has_value());
    return decisions && all_allowed(*decisions) ? id : "";
  }
  std::int64_t left(const std::string& key, const Limit& limit) {
    return store.check(key, limit, 0)->remaining;
  }
};

TEST(MemoryReservation, ReserveChargesTheEstimatesAllOrNothing) {
  MemoryReservationFixture f;
  EXPECT_FALSE(f.reserve(600).empty());
  EXPECT_EQ(f.left("rpm", kRequests), 9);
  EXPECT_EQ(f.left("tpm", kTokens), 400);
  EXPECT_TRUE(f.reserve(600).empty()) << "600 tokens do not fit in 400";
  EXPECT_EQ(f.left("rpm", kRequests), 9) << "a denied reservation charged the request layer";
}

TEST(MemoryReservation, CommitGivesBackOrChargesTheDifferenceOnce) {
  MemoryReservationFixture f;
  const std::string id = f.reserve(600);
  auto settled = f.store.settle_and_wait({.id = id, .cost = 250});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  ASSERT_EQ(settled->size(), 2u);
  EXPECT_EQ((*settled)[0].label, "rpm");
  EXPECT_EQ((*settled)[0].actual, 1) << "the single cost is the metered layer's";
  EXPECT_EQ((*settled)[1].label, "tpm");
  EXPECT_EQ((*settled)[1].refunded, 350);
  EXPECT_EQ((*settled)[1].after.remaining, 750);
  EXPECT_EQ(f.left("tpm", kTokens), 750);
  // Exactly once: the second is a conflict and changes nothing.
  auto again = f.store.settle_and_wait({.id = id, .cost = 0});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::kConflict);
  EXPECT_EQ(f.left("tpm", kTokens), 750);
  // Above the estimate: charged without a check, past the limit.
  const std::string big = f.reserve(700);
  auto debt = f.store.settle_and_wait({.id = big, .cost = 1'500});
  ASSERT_TRUE(debt.has_value());
  EXPECT_EQ((*debt)[1].charged, 800);
  EXPECT_FALSE((*debt)[1].after.allowed) << "a key in debt denies even a peek";
  EXPECT_EQ(f.left("tpm", kTokens), 0);
}

TEST(MemoryReservation, WithoutAMeteredLayerTheCostIsEveryLayers) {
  MemoryReservationFixture f;
  const std::string id = new_reservation_id();
  const KeyedLimit keys[] = {{"a", &kRequests}, {"b", &kTokens}};
  const ReservedLayer layers[] = {{"a", false}, {"b", false}};
  const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
  auto request = StoreRequest::make_reserve(keys, 5, std::nullopt, spec);
  ASSERT_TRUE(request && all_allowed(*f.store.decide_and_wait(*request)));
  auto settled = f.store.settle_and_wait({.id = id, .cost = 2});
  ASSERT_TRUE(settled.has_value());
  EXPECT_EQ((*settled)[0].refunded, 3);
  EXPECT_EQ((*settled)[1].refunded, 3);
}

TEST(MemoryReservation, BadSettlementsAreRefusedAndChangeNothing) {
  MemoryReservationFixture f;
  const std::string id = f.reserve(600);
  const LayerCost unknown[] = {{"tpm", 1}, {"edge", 1}};
  auto refused = f.store.settle_and_wait({.id = id, .costs = unknown});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("edge"), std::string::npos) << refused.error().message;
  const LayerCost twice[] = {{"tpm", 1}, {"tpm", 2}};
  EXPECT_EQ(f.store.settle_and_wait({.id = id, .costs = twice}).error().code,
            Errc::kInvalidArgument);
  EXPECT_EQ(f.store.settle_and_wait({.id = id, .cost = -1}).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(f.store.settle_and_wait({.id = "", .cost = 1}).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(f.store.settle_and_wait({.id = "unknown", .cost = 1}).error().code, Errc::kNotFound);
  EXPECT_EQ(f.left("tpm", kTokens), 400);
  // Still open: it settles now.
  EXPECT_TRUE(f.store.settle_and_wait({.id = id, .cost = 100}).has_value());
  EXPECT_EQ(f.left("tpm", kTokens), 900);
}

TEST(MemoryReservation, AnUnsettledReservationExpiresWithItsEstimateCharged) {
  MemoryReservationFixture f;
  const std::string id = f.reserve(600, std::chrono::seconds(30));
  f.clock->advance(30 * kMicrosPerSecond);
  auto late = f.store.settle_and_wait({.id = id, .cost = 0});
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, Errc::kNotFound);
  EXPECT_EQ(f.left("tpm", kTokens), 400);
}

// A store at a small cap (docs/SPEC.md §5.3): reserve until full; the next reserve is refused
// with kStoreFull and charges nothing; settled reservations do not count against the cap (their
// second settlement is still a 409); expiry frees room; spillway_reservations_open is the count.
struct MemoryReservationCapFixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(kReservationTestNow);
  MemoryStore store;
  explicit MemoryReservationCapFixture(std::size_t cap, std::size_t settled_cap = 1'000)
      : store({.max_reservations = cap, .max_settled_reservations = settled_cap, .clock = clock}) {}
  Result<Decisions> reserve(const std::string& id,
                            std::chrono::milliseconds ttl = std::chrono::seconds(10)) {
    const KeyedLimit keys[] = {{"tpm", &kTokens, 10}};
    const ReservedLayer layers[] = {{"tpm", true}};
    const ReserveSpec spec{.id = id, .ttl = ttl, .layers = layers};
    auto request = StoreRequest::make_reserve(keys, 1, std::nullopt, spec);
    return store.decide_and_wait(*request);
  }
  std::string metrics() {
    std::string out;
    store.append_metrics(out);
    return out;
  }
};

TEST(MemoryReservation, AFullStoreRefusesAReserveUnchargedAndSettledOnesDoNotCount) {
  MemoryReservationCapFixture f(3);
  for (const char* id : {"one", "two", "three"}) ASSERT_TRUE(f.reserve(id).has_value()) << id;
  auto full = f.reserve("four");
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.error().code, Errc::kStoreFull);
  EXPECT_NE(full.error().message.find("3 open reservations"), std::string::npos)
      << full.error().message;
  EXPECT_EQ(f.store.check("tpm", kTokens, 0)->remaining, 1'000 - 30) << "the refusal charged";
  EXPECT_NE(f.metrics().find("spillway_reservations_open 3"), std::string::npos) << f.metrics();
  // Settled, they leave the cap: room for as many new ones, and a second settlement is a 409.
  ASSERT_TRUE(f.store.settle_and_wait({.id = "one", .cost = 5}).has_value());
  ASSERT_TRUE(f.store.settle_and_wait({.id = "two", .cancel = true}).has_value());
  EXPECT_NE(f.metrics().find("spillway_reservations_open 1"), std::string::npos) << f.metrics();
  EXPECT_TRUE(f.reserve("four").has_value());
  EXPECT_TRUE(f.reserve("five").has_value());
  EXPECT_FALSE(f.reserve("six").has_value());
  for (const char* id : {"one", "two"}) {
    auto again = f.store.settle_and_wait({.id = id, .cost = 1});
    ASSERT_FALSE(again.has_value()) << id;
    EXPECT_EQ(again.error().code, Errc::kConflict) << id;
  }
  // Past their ttl the open ones expire (their estimates stay charged): the next reserve makes
  // room by itself, without a sweep, and a settlement of an expired one is a 404.
  f.clock->advance(10 * kMicrosPerSecond);
  EXPECT_TRUE(f.reserve("seven").has_value());
  EXPECT_NE(f.metrics().find("spillway_reservations_open 1"), std::string::npos) << f.metrics();
  EXPECT_NE(f.metrics().find("spillway_reservations_expired_total 3"), std::string::npos)
      << f.metrics();
  auto late = f.store.settle_and_wait({.id = "three", .cost = 1});
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, Errc::kNotFound);
  auto old = f.store.settle_and_wait({.id = "one", .cost = 1});
  ASSERT_FALSE(old.has_value());
  EXPECT_EQ(old.error().code, Errc::kNotFound) << "a tombstone outlived its ttl";
}

TEST(MemoryReservation, SettledIdsHaveTheirOwnBoundTheOldestForgottenFirst) {
  MemoryReservationCapFixture f(2, 2);
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(f.reserve(id).has_value()) << id;
    ASSERT_TRUE(f.store.settle_and_wait({.id = id, .cost = 1}).has_value()) << id;
  }
  // Two tombstones kept: "a" (the oldest) was forgotten, so its second settlement is a 404 (it
  // still charges nothing); "b" and "c" are 409s.
  auto forgotten = f.store.settle_and_wait({.id = "a", .cost = 1});
  ASSERT_FALSE(forgotten.has_value());
  EXPECT_EQ(forgotten.error().code, Errc::kNotFound);
  for (const char* id : {"b", "c"}) {
    auto again = f.store.settle_and_wait({.id = id, .cost = 1});
    ASSERT_FALSE(again.has_value()) << id;
    EXPECT_EQ(again.error().code, Errc::kConflict) << id;
  }
  EXPECT_EQ(f.store.check("tpm", kTokens, 0)->remaining, 1'000 - 3);
}

// Many threads reserving at once never hold more than the cap, and each refusal is kStoreFull.
TEST(MemoryReservation, RacingReservesNeverPassTheCap) {
  MemoryReservationCapFixture f(50);
  std::atomic<int> made{0}, refused{0}, other{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        auto r = f.reserve(new_reservation_id(), std::chrono::minutes(1));
        if (r) {
          ++made;
        } else if (r.error().code == Errc::kStoreFull) {
          ++refused;
        } else {
          ++other;
        }
      }
    });
  }
  threads.clear();
  EXPECT_EQ(made.load(), 50);
  EXPECT_EQ(refused.load(), 4 * 40 - 50);
  EXPECT_EQ(other.load(), 0);
  EXPECT_NE(f.metrics().find("spillway_reservations_open 50"), std::string::npos) << f.metrics();
}

TEST(MemoryReservation, RacingSettlementsOfOneIdSettleItOnce) {
  for (int round = 0; round < 20; ++round) {
    MemoryReservationFixture f;
    const std::string id = f.reserve(600);
    std::atomic<int> settled{0}, conflicts{0};
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto r = f.store.settle_and_wait({.id = id, .cancel = t % 2 == 0, .cost = 100});
        if (r) ++settled;
        if (!r && r.error().code == Errc::kConflict) ++conflicts;
      });
    }
    threads.clear();
    EXPECT_EQ(settled.load(), 1);
    EXPECT_EQ(conflicts.load(), 3);
    const std::int64_t left = f.left("tpm", kTokens);
    EXPECT_TRUE(left == 1'000 || left == 900) << left << ": settled more than once";
  }
}

// 8 threads reserve estimates and commit actual costs at or below them, all in one window: the
// actual costs admitted never add up to more than the limit, and every unit refunded is usable.
TEST(MemoryReservation, ActualCostsAdmittedNeverExceedTheLimitUnderRaces) {
  MemoryReservationFixture f;
  std::atomic<std::int64_t> actual_total{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      for (int i = 0; i < 300; ++i) {
        const std::int64_t estimate = 1 + static_cast<std::int64_t>(random() % 60);
        const std::string id = new_reservation_id();
        const KeyedLimit keys[] = {{"shared", &kTokens, estimate}};
        const ReservedLayer layers[] = {{"tpm", true}};
        const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
        auto request = StoreRequest::make_reserve(keys, 1, std::nullopt, spec);
        auto d = f.store.decide_and_wait(*request);
        if (!d || !all_allowed(*d)) continue;
        const std::int64_t actual = static_cast<std::int64_t>(random() % (estimate + 1));
        if (f.store.settle_and_wait({.id = id, .cost = actual})) actual_total += actual;
      }
    });
  }
  threads.clear();
  EXPECT_LE(actual_total.load(), kTokens.limit());
  // Everything not used came back: what is charged is exactly the actual costs.
  EXPECT_EQ(f.left("shared", kTokens), kTokens.limit() - actual_total.load());
}

}  // namespace
}  // namespace spillway
