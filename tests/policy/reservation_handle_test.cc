// spillway::Reservation (include/spillway/reservation.h): a policy's reservation committed,
// committed per layer, or cancelled through the handle, once.
#include <gtest/gtest.h>

#include <chrono>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "spillway/reservation.h"
#include "tests/support/llm_policy.h"

namespace spillway {
namespace {

constexpr Micros kHandleNow = 10 * kMicrosPerMinute;  // a window's start

struct Held {
  std::shared_ptr<const policy::Policy> policy;
  MemoryStore store;

  Held() {
    policy::PolicySpec spec;
    spec.layers = testing::llm_layers(10, 10'000);
    policy = *policy::Policy::make(spec);
  }

  // The reservation of one request of `tokens` by key k1.
  Reservation reserve(int tokens) {
    auto decided = policy->reserve(store, {{"api_key", "k1"}, {"tokens", std::to_string(tokens)}},
                                   1, std::chrono::minutes(10), kHandleNow);
    EXPECT_TRUE(decided && decided->allowed);
    return Reservation(store, decided ? decided->reservation : "");
  }
};

TEST(ReservationHandle, CommitGivesBackTheDifferenceOnceAndACopySettlesTheSameReservation) {
  Held held;
  const Reservation first = held.reserve(4'000);
  EXPECT_EQ(first.id().size(), 22u);
  const Result<Settled> settled = first.commit(1'000, kHandleNow);
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  ASSERT_EQ(settled->size(), 2u);
  EXPECT_EQ((*settled)[1].label, "tpm");
  EXPECT_EQ((*settled)[1].refunded, 3'000);
  EXPECT_EQ((*settled)[1].after.remaining, 9'000);
  EXPECT_EQ((*settled)[0].actual, 1) << "rpm has no cost attribute: it keeps its estimate";
  const Reservation copy = first;
  const Result<Settled> again = copy.cancel(kHandleNow);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::kConflict);
}

TEST(ReservationHandle, PerLayerCostsAndCancelGoThroughTheStore) {
  Held held;
  const Reservation named = held.reserve(2'000);
  const LayerCost costs[] = {{"tpm", 2'500}, {"rpm", 0}};
  const Result<Settled> settled = named.commit(costs, kHandleNow);
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  EXPECT_EQ((*settled)[0].refunded, 1);   // rpm: 1 back
  EXPECT_EQ((*settled)[1].charged, 500);  // tpm: 500 as debt
  EXPECT_EQ((*settled)[1].after.remaining, 7'500);
  const Reservation cancelled = held.reserve(3'000);
  const Result<Settled> back = cancelled.cancel(kHandleNow);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ((*back)[1].refunded, 3'000);
  EXPECT_EQ((*back)[1].after.remaining, 7'500);
  const Result<Settled> unknown = Reservation(held.store, "no-such-id").commit(1, kHandleNow);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, Errc::kNotFound);
}

}  // namespace
}  // namespace spillway
