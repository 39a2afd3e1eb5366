// Concurrency limits (Limit::concurrency, docs/SPEC.md §2.5): at most N requests in flight per
// key, each holding a slot until its ticket is released or its hold_ttl ends.
//
// A property test against a model: random histories of acquires (all-or-nothing with a rate
// layer), releases, second releases, releases of unknown or expired tickets, callers that never
// release, and time moving on, on the memory store with `now` given; the model keeps the holds
// and the rate's count, and the store must answer as it does at every step: admitted exactly when
// a slot is free and the rate has room, denied requests take nothing, a release gives exactly its
// slot back and keeps the rate's charge, a second release is a conflict, an expired ticket is not
// found, and a hold leaves exactly hold_ttl after it was taken. Then the same histories (without
// the releases of expired tickets, which Redis settles by its own clock) on one Redis and on a
// Redis Cluster (each layer's key on its own slot) answer as the memory store does. And the
// library's Ticket releases on destruction.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "spillway/ticket.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"
#include "tests/support/reservation_checks.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using testing::pick_whole_range;

constexpr Micros kConcurrencyStart = 7 * kMicrosPerHour;

// The model of one key under a concurrency limit and one under a fixed_window rate that never
// refills while a history runs.
struct HoldModel {
  struct Hold {
    std::string ticket;
    Micros at = 0;
    bool released = false;
  };
  std::int64_t slots = 0;
  Micros ttl = 0;
  std::int64_t rate_limit = 0;
  std::int64_t rate_used = 0;
  std::vector<Hold> holds;

  bool live(const Hold& h, Micros now) const { return !h.released && now < h.at + ttl; }
  std::int64_t in_flight(Micros now) const {
    return std::count_if(holds.begin(), holds.end(), [&](const Hold& h) { return live(h, now); });
  }
};

struct ConcurrencyCase {
  Limit slots;
  Limit rate;
};

ConcurrencyCase concurrency_case() {
  const std::int64_t n = pick_whole_range<std::int64_t>(1, 6);
  const Micros ttl = pick_whole_range<Micros>(1, 20) * 1000;
  return {
      *Limit::concurrency(n, ttl),
      *Limit::make(Algorithm::kFixedWindow, pick_whole_range<std::int64_t>(1, 40), kMicrosPerHour)};
}

// One step of a history.
struct Step {
  enum Kind { kAcquire, kRelease, kReleaseAgain, kReleaseUnknown, kWait } kind;
  std::size_t which = 0;  // kRelease / kReleaseAgain: index into the holds taken so far
  Micros wait = 0;
};

// `record_ttl`: how long the ticket lives; the hold's own lifetime by default. (Redis counts it
// on its own clock, so the differential gives a minute and never releases a ticket its `now`
// expired.)
Result<Decisions> acquire(Store& store, const ConcurrencyCase& c, const std::string& prefix,
                          const std::string& id, std::optional<Micros> now,
                          std::optional<std::chrono::milliseconds> record_ttl = std::nullopt) {
  const std::string slot_key = prefix + "slots";
  const std::string rate_key = prefix + "rate";
  const KeyedLimit keys[] = {{rate_key, &c.rate}, {slot_key, &c.slots}};
  const ReservedLayer layers[] = {{.label = "rate"}, {.label = "slots", .hold = true}};
  const ReserveSpec spec{
      .id = id,
      .ttl = record_ttl.value_or(std::chrono::milliseconds(c.slots.period() / 1000)),
      .layers = layers};
  Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, now, spec);
  if (!request) return std::unexpected(request.error());
  return store.decide_and_wait(*request);
}

Result<Settled> release(Store& store, const std::string& id, std::optional<Micros> now) {
  return store.settle_and_wait({.id = id, .now = now, .release = true});
}

std::vector<Step> history(bool with_expired_releases) {
  std::vector<Step> steps;
  const int n = *rc::gen::inRange(1, 80);
  std::size_t acquires = 0;
  for (int i = 0; i < n; ++i) {
    const int kind = pick_whole_range(0, 10);
    if (kind < 4 || acquires == 0) {
      steps.push_back({Step::kAcquire});
      ++acquires;
    } else if (kind < 7) {
      steps.push_back({Step::kRelease, static_cast<std::size_t>(pick_whole_range<std::int64_t>(
                                           0, static_cast<std::int64_t>(acquires)))});
    } else if (kind < 8) {
      steps.push_back({Step::kReleaseAgain, static_cast<std::size_t>(pick_whole_range<std::int64_t>(
                                                0, static_cast<std::int64_t>(acquires)))});
    } else if (kind < 9 && with_expired_releases) {
      steps.push_back({Step::kReleaseUnknown});
    } else {
      steps.push_back({Step::kWait, 0, pick_whole_range<Micros>(0, 8000)});
    }
  }
  return steps;
}

// Runs `steps` on `store` against the model; with `skip_expired`, a release of a ticket whose hold
// the model says expired is left out (Redis expires records by its own clock, not by `now`).
// Returns what the store answered, step by step, for the differential.
std::vector<std::string> run_against_model(Store& store, const ConcurrencyCase& c,
                                           const std::vector<Step>& steps,
                                           const std::string& prefix, bool skip_expired) {
  HoldModel model{.slots = c.slots.limit(), .ttl = c.slots.period(), .rate_limit = c.rate.limit()};
  std::vector<std::string> answers;
  std::vector<std::string> tickets;  // every acquire's id, admitted or not
  std::vector<bool> admitted;
  Micros now = kConcurrencyStart;
  for (const Step& step : steps) {
    if (step.kind == Step::kWait) {
      now += step.wait;
      continue;
    }
    if (step.kind == Step::kAcquire) {
      const std::string id = new_reservation_id();
      const std::int64_t in_flight = model.in_flight(now);
      const bool expect = in_flight < model.slots && model.rate_used < model.rate_limit;
      Result<Decisions> d =
          acquire(store, c, prefix, id, now,
                  skip_expired ? std::optional(std::chrono::milliseconds(60'000)) : std::nullopt);
      RC_ASSERT(d.has_value());
      RC_ASSERT(d->size() == 2u);
      const bool got = (*d)[0].allowed && (*d)[1].allowed;
      RC_ASSERT(got == expect);
      // Denied by the slots: they report none free; by the rate: the slots report what is free.
      RC_ASSERT((*d)[1].allowed == (in_flight < model.slots));
      if (got) {
        model.rate_used += 1;
        model.holds.push_back({id, now, false});
        RC_ASSERT((*d)[1].remaining == model.slots - in_flight - 1);
      } else if ((*d)[1].allowed) {
        RC_ASSERT((*d)[1].remaining == model.slots - in_flight);  // nothing taken
      } else {
        // Denied for a slot: the wait is until the oldest live hold expires.
        Micros oldest = now + model.ttl;
        for (const auto& h : model.holds) {
          if (model.live(h, now)) oldest = std::min(oldest, h.at);
        }
        RC_ASSERT((*d)[1].retry_after == oldest + model.ttl - now);
      }
      RC_ASSERT((*d)[0].remaining == model.rate_limit - model.rate_used);
      tickets.push_back(id);
      admitted.push_back(got);
      answers.push_back(std::string(got ? "admitted" : "denied") + " " +
                        std::to_string((*d)[1].remaining) + " " +
                        std::to_string((*d)[0].remaining));
      continue;
    }
    if (step.kind == Step::kReleaseUnknown) {
      Result<Settled> s = release(store, new_reservation_id(), now);
      RC_ASSERT(!s.has_value());
      RC_ASSERT(s.error().code == Errc::kNotFound);
      answers.push_back("unknown");
      continue;
    }
    const std::size_t i = step.which;
    const std::string& id = tickets[i];
    const auto held = std::find_if(model.holds.begin(), model.holds.end(),
                                   [&](const HoldModel::Hold& h) { return h.ticket == id; });
    const bool expired = held != model.holds.end() && now >= held->at + model.ttl;
    if (skip_expired && expired) continue;
    Result<Settled> s = release(store, id, now);
    if (!admitted[i] || expired) {
      RC_ASSERT(!s.has_value());
      // A denied acquire left no ticket; an expired one is gone (its tombstone too, when it was
      // released before: both live exactly as long as the hold).
      RC_ASSERT(s.error().code == Errc::kNotFound);
      answers.push_back("not found");
    } else if (held->released) {
      RC_ASSERT(!s.has_value());
      RC_ASSERT(s.error().code == Errc::kConflict);
      answers.push_back("conflict");
    } else {
      RC_ASSERT(s.has_value());
      RC_ASSERT(s->size() == 2u);
      RC_ASSERT((*s)[0].refunded == 0);  // the rate keeps its charge
      RC_ASSERT((*s)[0].charged == 0);
      RC_ASSERT((*s)[1].refunded == 1);  // the slot comes back, exactly
      RC_ASSERT((*s)[1].hold && !(*s)[0].hold);
      held->released = true;
      RC_ASSERT((*s)[1].after.remaining == model.slots - model.in_flight(now));
      answers.push_back("released " + std::to_string((*s)[1].after.remaining));
    }
  }
  return answers;
}

std::string concurrency_prefix() {
  static std::atomic<int> counter{0};
  return "conc" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ":";
}

TEST(ConcurrencyModel, TheMemoryStoreHoldsReleasesAndExpiresAsTheModelSays) {
  const bool ok = rc::check([] {
    const ConcurrencyCase c = concurrency_case();
    const std::vector<Step> steps = history(true);
    MemoryStore store;
    run_against_model(store, c, steps, "k:", false);
  });
  EXPECT_TRUE(ok);
}

TEST(ConcurrencyModel, ATicketReleasesItsSlotWhenDestroyed) {
  MemoryStore store;
  const ConcurrencyCase c{*Limit::concurrency(1, kMicrosPerMinute),
                          *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour)};
  const std::string first = new_reservation_id();
  ASSERT_TRUE(all_allowed(*acquire(store, c, "t:", first, std::nullopt)));
  {
    Ticket ticket(store, first);
    EXPECT_TRUE(ticket.holds());
    EXPECT_FALSE(all_allowed(*acquire(store, c, "t:", new_reservation_id(), std::nullopt)))
        << "the one slot is held";
  }
  // Released on destruction: the next acquire gets the slot, and its ticket released by hand
  // once answers a conflict the second time (through a copy of its id).
  const std::string second = new_reservation_id();
  ASSERT_TRUE(all_allowed(*acquire(store, c, "t:", second, std::nullopt)));
  Ticket ticket(store, second);
  Result<Settled> released = ticket.release();
  ASSERT_TRUE(released.has_value()) << released.error().message;
  EXPECT_EQ(released->at(1).refunded, 1);
  EXPECT_FALSE(ticket.holds());
  EXPECT_TRUE(ticket.release().has_value()) << "a second release of the same object is a no-op";
  Result<Settled> again = store.settle_and_wait({.id = second});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::kConflict);
  // A moved-from ticket releases nothing; the moved-to one releases once.
  const std::string third = new_reservation_id();
  ASSERT_TRUE(all_allowed(*acquire(store, c, "t:", third, std::nullopt)));
  {
    Ticket a(store, third);
    Ticket b(std::move(a));
    EXPECT_FALSE(a.holds());  // NOLINT(bugprone-use-after-move): what a move leaves
    EXPECT_TRUE(b.holds());
  }
  EXPECT_TRUE(all_allowed(*acquire(store, c, "t:", new_reservation_id(), std::nullopt)));
}

testing::RedisServer& concurrency_server() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

void redis_like_memory(const std::string& url) {
  const ConcurrencyCase c = concurrency_case();
  const std::vector<Step> steps = history(false);
  MemoryStore memory;
  std::unique_ptr<RedisStore> redis = testing::open_ready_store(url, concurrency_prefix());
  RC_ASSERT(redis != nullptr);
  const std::string prefix = concurrency_prefix();
  const std::vector<std::string> expected = run_against_model(memory, c, steps, prefix, true);
  const std::vector<std::string> got = run_against_model(*redis, c, steps, prefix, true);
  RC_ASSERT(got == expected);
}

TEST(RedisConcurrency, OneRedisAnswersAsTheMemoryStoreAndTheModel) {
  const std::string url = concurrency_server().url();
  EXPECT_TRUE(rc::check([&] { redis_like_memory(url); }));
}

TEST(RedisConcurrencyCluster, AClusterAnswersAsTheMemoryStoreAndTheModel) {
  const std::string url = testing::shared_cluster().url();
  EXPECT_TRUE(rc::check([&] { redis_like_memory(url); }));
}

// A release settles only a ticket: a reservation that holds no slot is refused (kInvalidArgument,
// field "ticket") and left open, on memory and on Redis alike.
void expect_only_tickets_released(Store& store) {
  const Limit rate = *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour);
  const std::string id = new_reservation_id();
  const KeyedLimit keys[] = {{"plain", &rate}};
  const ReservedLayer layers[] = {{.label = "rate"}};
  const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
  Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, kConcurrencyStart, spec);
  ASSERT_TRUE(request.has_value());
  Result<Decisions> reserved = store.decide_and_wait(*request);
  ASSERT_TRUE(reserved.has_value()) << reserved.error().message;
  ASSERT_TRUE(all_allowed(*reserved));
  Result<Settled> released =
      store.settle_and_wait({.id = id, .now = kConcurrencyStart, .release = true});
  ASSERT_FALSE(released.has_value());
  EXPECT_EQ(released.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(released.error().field, "ticket");
  Result<Settled> committed =
      store.settle_and_wait({.id = id, .cost = 0, .now = kConcurrencyStart});
  ASSERT_TRUE(committed.has_value()) << "still open: " << committed.error().message;
  EXPECT_EQ(committed->at(0).refunded, 1);
  EXPECT_FALSE(committed->at(0).hold);
}

TEST(ConcurrencyModel, OnlyATicketIsReleased) {
  MemoryStore store;
  expect_only_tickets_released(store);
}

TEST(RedisConcurrency, OnlyATicketIsReleased) {
  std::unique_ptr<RedisStore> store =
      testing::open_ready_store(concurrency_server().url(), concurrency_prefix());
  ASSERT_NE(store, nullptr);
  expect_only_tickets_released(*store);
}

// A hold expires on Redis by Redis' own clock: a ticket not released is not found once its
// hold_ttl has passed, and its slot is free again.
TEST(RedisConcurrency, AHoldNotReleasedExpiresByRedisClock) {
  Result<std::unique_ptr<RedisStore>> store =
      RedisStore::open({.url = concurrency_server().url(), .key_prefix = concurrency_prefix()});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  const ConcurrencyCase c{*Limit::concurrency(1, 300'000),
                          *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour)};
  const auto acquire_now = [&](const std::string& id) {
    const KeyedLimit keys[] = {{"rate", &c.rate}, {"slots", &c.slots}};
    const ReservedLayer layers[] = {{.label = "rate"}, {.label = "slots", .hold = true}};
    const ReserveSpec spec{.id = id, .ttl = std::chrono::milliseconds(300), .layers = layers};
    Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, std::nullopt, spec);
    return (*store)->decide_and_wait(*request);
  };
  const std::string first = new_reservation_id();
  Result<Decisions> taken = acquire_now(first);
  ASSERT_TRUE(taken.has_value()) << taken.error().message;
  ASSERT_TRUE(all_allowed(*taken));
  Result<Decisions> full = acquire_now(new_reservation_id());
  ASSERT_TRUE(full.has_value());
  EXPECT_FALSE(all_allowed(*full)) << "the one slot is held";
  // Waits for Redis' clock to pass the hold (polled: a loaded machine may be slow).
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Result<Decisions> again = acquire_now(new_reservation_id());
    ASSERT_TRUE(again.has_value());
    freed = all_allowed(*again);
  }
  EXPECT_TRUE(freed) << "the hold never expired";
  Result<Settled> late = (*store)->settle_and_wait({.id = first});
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, Errc::kNotFound);
}

}  // namespace
}  // namespace spillway
