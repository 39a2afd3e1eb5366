// What the Redis reservation tests share (tests/redis/reservation_redis_test.cc, tls_test.cc,
// sentinel_test.cc): a connected RedisStore, and the two-layer reservation they make and settle —
// a request layer (rpm: fixed_window 10 per hour, the request's cost 1, not metered) and a token
// layer (tpm: sliding_log 1,000 per hour, an estimate of 600, metered), in one window of an hour
// from kReserveNow so that nothing refills while a test runs.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spillway/redis_store.h"
#include "spillway/store.h"

namespace spillway::testing {

inline const Limit kReserveRequests = *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour);
inline const Limit kReserveTokens = *Limit::make(Algorithm::kSlidingLog, 1'000, kMicrosPerHour);
inline constexpr Micros kReserveNow = 5 * kMicrosPerHour;

// A store on `url` with `prefix`, connected; nullptr (and a test failure) if not. The TTL floor:
// the tests' `now` is not the server's clock, and no key may expire by the wall clock mid-test.
inline std::unique_ptr<RedisStore> open_ready_store(const std::string& url,
                                                    const std::string& prefix,
                                                    bool dry_run_first = true) {
  Result<std::unique_ptr<RedisStore>> store =
      RedisStore::open({.url = url,
                        .key_prefix = prefix,
                        .timeout = std::chrono::milliseconds(2000),
                        .ttl_floor = std::chrono::minutes(5),
                        .cluster_dry_run_first = dry_run_first});
  if (!store) {
    ADD_FAILURE() << "open " << url << ": " << store.error().message;
    return nullptr;
  }
  if (Result<void> up = (*store)->wait_ready(std::chrono::seconds(5)); !up) {
    ADD_FAILURE() << url << " is not ready: " << up.error().message;
    return nullptr;
  }
  return std::move(*store);
}

// The reservation `id` of one request (rpm) and 600 tokens (tpm) at kReserveNow.
inline Result<Decisions> reserve_request_and_tokens(Store& store, const std::string& id) {
  const KeyedLimit keys[] = {{"rpm", &kReserveRequests}, {"tpm", &kReserveTokens, 600}};
  const ReservedLayer layers[] = {{"rpm", false}, {"tpm", true}};
  const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
  const Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, kReserveNow, spec);
  if (!request) return std::unexpected(request.error());
  return store.decide_and_wait(*request);
}

// That reservation (on fresh keys) committed at 250 tokens: rpm keeps its 1, tpm gets 350 back.
inline void expect_committed_at_250(const Settled& settled) {
  ASSERT_EQ(settled.size(), 2u);
  const SettledLayer& requests = settled[0];
  EXPECT_EQ(requests.label, "rpm");
  EXPECT_EQ(requests.estimate, 1);
  EXPECT_EQ(requests.actual, 1) << "the single cost is the metered layer's";
  EXPECT_EQ(requests.refunded, 0);
  EXPECT_EQ(requests.charged, 0);
  EXPECT_TRUE(requests.after.allowed);
  EXPECT_EQ(requests.after.limit, 10);
  EXPECT_EQ(requests.after.remaining, 9);
  const SettledLayer& tokens = settled[1];
  EXPECT_EQ(tokens.label, "tpm");
  EXPECT_EQ(tokens.estimate, 600);
  EXPECT_EQ(tokens.actual, 250);
  EXPECT_EQ(tokens.refunded, 350);
  EXPECT_EQ(tokens.charged, 0);
  EXPECT_TRUE(tokens.after.allowed);
  EXPECT_EQ(tokens.after.limit, 1'000);
  EXPECT_EQ(tokens.after.remaining, 750);
}

// What `key` has left under `limit` at kReserveNow (a peek); -1 (and a failure) on an error.
inline std::int64_t left_at_reserve_time(Store& store, const std::string& key, const Limit& limit) {
  const Result<Decision> peek = store.check(key, limit, 0, kReserveNow);
  EXPECT_TRUE(peek.has_value()) << key << ": " << (peek ? "" : peek.error().message);
  return peek ? peek->remaining : -1;
}

// A concurrency limit of one slot on `maker` and `other`, two stores on one deployment: a ticket
// taken through one holds the slot for both, is released through the other, and a second release
// through the first is a conflict (docs/SPEC.md §2.5). On fresh keys under `key`.
inline void expect_one_slot_shared_and_released(Store& maker, Store& other,
                                                const std::string& key) {
  const Limit slot = *Limit::concurrency(1, kMicrosPerMinute);
  const auto acquire = [&](Store& store, const std::string& id) {
    const KeyedLimit keys[] = {{key, &slot}};
    const ReservedLayer layers[] = {{.label = "in_flight", .hold = true}};
    const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
    const Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, kReserveNow, spec);
    return store.decide_and_wait(*request);
  };
  const std::string ticket = new_reservation_id();
  const Result<Decisions> taken = acquire(maker, ticket);
  ASSERT_TRUE(taken.has_value()) << taken.error().message;
  ASSERT_TRUE(all_allowed(*taken));
  const Result<Decisions> full = acquire(other, new_reservation_id());
  ASSERT_TRUE(full.has_value()) << full.error().message;
  EXPECT_FALSE(all_allowed(*full)) << "the one slot is held, seen through the other store";
  const Result<Settled> released =
      other.settle_and_wait({.id = ticket, .now = kReserveNow, .release = true});
  ASSERT_TRUE(released.has_value()) << released.error().message;
  EXPECT_EQ(released->at(0).refunded, 1);
  EXPECT_TRUE(released->at(0).hold);
  const Result<Decisions> again = acquire(other, new_reservation_id());
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_TRUE(all_allowed(*again)) << "the slot is back";
  const Result<Settled> twice =
      maker.settle_and_wait({.id = ticket, .now = kReserveNow, .release = true});
  ASSERT_FALSE(twice.has_value());
  EXPECT_EQ(twice.error().code, Errc::kConflict);
}

}  // namespace spillway::testing
