// Reservations (usage-based limits, docs/SPEC.md §5.3) on Redis and on a Redis Cluster.
//
// A differential property: random histories of checks, reservations and settlements (commits
// below, at and above the estimate, per-label costs, cancels, second settlements, unknown ids,
// unknown labels) and charges without a check (Operation::kCharge: usage reported after the work,
// up to past the debt bound, some layers with costs of their own) over a few layered keys of
// every algorithm, with time moving forward and sometimes back, run on the memory store, on one
// Redis and on a Redis Cluster (each layer's key on its own hash slot): the same decisions, the
// same settlements and the same error codes at every step. Then, on one Redis: a reservation
// expires by Redis' own clock with its estimate kept; two settlements racing for one id settle it
// once; a reservation made through one store object settles through another; a denied reservation
// leaves no key behind, on a cluster too (where the slot that admitted is refunded).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <latch>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "src/redis/key_slot.h"
#include "tests/support/poll.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"
#include "tests/support/reservation_checks.h"
#include "tests/support/whole_range.h"

namespace spillway {
namespace {

using testing::pick_whole_range;

using namespace std::chrono_literals;

// One redis-server for the file (the cluster is testing::shared_cluster()).
testing::RedisServer& reservation_server() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

std::string reservation_prefix() {
  static std::atomic<int> counter{0};
  return "resv" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// A store on `url`, connected (tests/support/reservation_checks.h).
std::unique_ptr<RedisStore> open_reservation_store(const std::string& url,
                                                   const std::string& prefix,
                                                   bool dry_run_first = true) {
  return testing::open_ready_store(url, prefix, dry_run_first);
}

// ------------------------------------------------------------------------------------------------
// What the stores answered, printed and compared.
// ------------------------------------------------------------------------------------------------

std::string show_redis(const Decision& d) {
  std::ostringstream out;
  out << (d.allowed ? "allowed" : "denied") << " limit=" << d.limit << " remaining=" << d.remaining
      << " retry_after=" << d.retry_after << " reset_after=" << d.reset_after;
  if (d.local) out << " local";
  return out.str();
}

std::string show_redis(const SettledLayer& layer) {
  return layer.label + ": estimate=" + std::to_string(layer.estimate) +
         " actual=" + std::to_string(layer.actual) + " refunded=" + std::to_string(layer.refunded) +
         " charged=" + std::to_string(layer.charged) + " after " + show_redis(layer.after);
}

// A list of decisions or settled layers, one shown after another.
template <typename List>
std::string show_list(const List& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : "; ") + show_redis(items[i]);
  return out + "]";
}
std::string show_redis(const Decisions& decisions) { return show_list(decisions); }
std::string show_redis(const Settled& settled) { return show_list(settled); }

std::string show_redis(const Error& error) {
  return std::string(errc_name(error.code)) + " (" + error.message + ")";
}

template <typename T>
std::string show_redis(const Result<T>& result) {
  return result ? show_redis(*result) : "error " + show_redis(result.error());
}

bool same(const Decisions& a, const Decisions& b) { return a == b; }

bool same_layer(const SettledLayer& a, const SettledLayer& b) {
  return a.label == b.label && a.estimate == b.estimate && a.actual == b.actual &&
         a.refunded == b.refunded && a.charged == b.charged && a.after == b.after;
}

bool same(const Settled& a, const Settled& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same_layer);
}

// Equal answers, or errors of the same code (the messages may differ).
template <typename T>
bool same(const Result<T>& a, const Result<T>& b) {
  if (a.has_value() != b.has_value()) return false;
  return a ? same(*a, *b) : a.error().code == b.error().code;
}

// ------------------------------------------------------------------------------------------------
// The differential property.
// ------------------------------------------------------------------------------------------------

// A store compared with the memory store.
struct Backend {
  std::string name;
  Store* store;
};

// Runs each step on the memory store and then on the others, and fails the case (with the
// history so far) at the first answer of another store that is not the memory store's.
class Differential {
 public:
  Differential(Store& memory, std::vector<Backend> others)
      : memory_(memory), others_(std::move(others)) {}

  void note(const std::string& text) { log_ += "\n  " + text; }
  const std::string& log() const { return log_; }

  // `run(store)` on every store; returns the memory store's answer.
  template <typename Run>
  auto on_all(const std::string& what, const Run& run) {
    note(what);
    auto want = run(memory_);
    for (const Backend& other : others_) {
      auto got = run(*other.store);
      if (!same(want, got)) {
        RC_FAIL("history:" + log_ + "\nmemory: " + show_redis(want) + "\n" + other.name + ": " +
                show_redis(got));
      }
    }
    log_ += "\n    -> " + show_redis(want);
    return want;
  }

  // Fails the case: the memory store's answer was not the one the step expects.
  [[noreturn]] void fail(const std::string& why) const {
    RC_FAIL("history:" + log_ + "\n" + why);
    throw std::logic_error("unreachable");
  }

 private:
  Store& memory_;
  std::vector<Backend> others_;
  std::string log_;
};

// One layer of a request: a key under a limit, and its label in a reservation.
struct RedisTestLayer {
  std::string key;
  const Limit* limit;
  std::string label;
};

// A reservation every store admitted (open, or settled).
struct Made {
  std::string id;
  std::vector<std::string> labels;
  std::vector<std::int64_t> estimates;
  std::vector<bool> metered;
};

// The estimate a settlement's single `cost` is compared with: the first metered layer's, or,
// when none is metered (the cost applies to every layer), the first layer's.
std::int64_t estimate_of_cost(const Made& made) {
  for (std::size_t i = 0; i < made.metered.size(); ++i) {
    if (made.metered[i]) return made.estimates[i];
  }
  return made.estimates.front();
}

Limit random_limit() {
  const Algorithm algorithm =
      kAlgorithms[static_cast<std::size_t>(pick_whole_range(0, kAlgorithmCount))];
  const std::int64_t limit = pick_whole_range<std::int64_t>(1, 6);
  const Micros period = pick_whole_range<Micros>(100, 3'001);
  std::optional<std::int64_t> burst;
  if (takes_burst(algorithm)) burst = pick_whole_range<std::int64_t>(1, 6);
  Result<Limit> made = Limit::make(algorithm, limit, period, burst);
  if (!made) RC_FAIL("Limit::make: " + made.error().message);
  // A third of them a lower priority's view (docs/SPEC.md §2.4): settlements report the peek
  // that priority sees, on every backend.
  if (pick_whole_range(0, 3) == 0) {
    made = made->with_reserved(pick_whole_range<std::int64_t>(1, made->capacity() + 1));
    if (!made) RC_FAIL("with_reserved: " + made.error().message);
  }
  return *made;
}

// A user key, from `stem`, whose stored key on `cluster` is in the `third`-th third of the hash
// slots (0, 1 or 2: about one primary's slots each in a three-primary cluster), so that the
// layers of one request are on different slots; `stem` itself without a cluster.
std::string key_in_third(const RedisStore* cluster, const Limit& limit, const std::string& stem,
                         int third) {
  if (cluster == nullptr) return stem;
  for (int i = 0; i < 10'000; ++i) {
    std::string key = stem + "." + std::to_string(i);
    if (redis::key_slot(cluster->storage_key(key, limit)) * 3 / redis::kClusterSlots == third) {
      return key;
    }
  }
  throw std::runtime_error("no key of " + stem + " in third " + std::to_string(third));
}

enum class Step {
  kTime,
  kCheck,
  kReserve,
  kCommit,
  kCommitByLabel,
  kCancel,
  kAgain,
  kUnknownId,
  kUnknownLabel,
  kCharge,
};

// One history on the memory store, one Redis and (with_cluster) a Redis Cluster.
void reservations_like_memory(bool with_cluster) {
  const std::string prefix = reservation_prefix();
  MemoryStore memory;
  std::unique_ptr<RedisStore> redis = open_reservation_store(reservation_server().url(), prefix);
  if (!redis) RC_FAIL("no Redis store");
  std::vector<Backend> others = {{"redis", redis.get()}};
  std::unique_ptr<RedisStore> cluster;
  bool dry_run_first = true;
  if (with_cluster) {
    dry_run_first = pick_whole_range(0, 2) == 0;
    cluster = open_reservation_store(testing::shared_cluster().url(), prefix, dry_run_first);
    if (!cluster) RC_FAIL("no Redis Cluster store");
    others.push_back({"cluster", cluster.get()});
  }
  Differential all(memory, std::move(others));
  all.note("prefix " + prefix +
           (with_cluster ? std::string(" cluster_dry_run_first=") + (dry_run_first ? "1" : "0")
                         : std::string()));

  // 1 to 3 targets of 1 to 3 layers each; a later target's first layer is sometimes the first
  // target's (one key that two kinds of request share).
  std::deque<Limit> limits;  // stable addresses
  std::vector<std::vector<RedisTestLayer>> targets(
      static_cast<std::size_t>(pick_whole_range(1, 4)));
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const int layer_count = pick_whole_range(1, 4);
    for (int j = 0; j < layer_count; ++j) {
      const std::string label = "layer" + std::to_string(j);
      if (t > 0 && j == 0 && pick_whole_range(0, 4) == 0) {
        targets[t].push_back({targets[0][0].key, targets[0][0].limit, label});
      } else {
        limits.push_back(random_limit());
        const std::string stem = "t" + std::to_string(t) + "l" + std::to_string(j);
        targets[t].push_back(
            {key_in_third(cluster.get(), limits.back(), stem, j), &limits.back(), label});
      }
      all.note("target " + std::to_string(t) + " " + label + ": " + targets[t].back().key + " " +
               targets[t].back().limit->describe());
    }
  }
  const auto pick_target = [&]() -> const std::vector<RedisTestLayer>& {
    return targets[static_cast<std::size_t>(
        pick_whole_range<int>(0, static_cast<int>(targets.size())))];
  };
  // The keyed limits of a request: each layer charged the request's cost or, now and then, a
  // cost of its own (a layer that counts something else).
  const auto keyed = [](const std::vector<RedisTestLayer>& layers, std::string& text) {
    std::vector<KeyedLimit> checks;
    for (const RedisTestLayer& layer : layers) {
      const std::int64_t own = pick_whole_range(0, 3) == 0
                                   ? pick_whole_range<std::int64_t>(0, layer.limit->limit() + 2)
                                   : kRequestCost;
      checks.push_back({layer.key, layer.limit, own});
      text += " " + layer.key + (own == kRequestCost ? "" : "@" + std::to_string(own));
    }
    return checks;
  };

  std::vector<Made> open;
  std::vector<Made> settled;
  Micros now = pick_whole_range<Micros>(1'000'000, 2'000'000);
  const int steps = pick_whole_range(1, 50);
  for (int s = 0; s < steps; ++s) {
    const int kind = pick_whole_range(0, 100);
    Step step = kind < 18   ? Step::kTime
                : kind < 30 ? Step::kCheck
                : kind < 50 ? Step::kReserve
                : kind < 61 ? Step::kCommit
                : kind < 68 ? Step::kCommitByLabel
                : kind < 74 ? Step::kCancel
                : kind < 79 ? Step::kAgain
                : kind < 83 ? Step::kUnknownId
                : kind < 89 ? Step::kUnknownLabel
                : kind < 96 ? Step::kCharge
                            : Step::kReserve;
    const bool needs_open = step == Step::kCommit || step == Step::kCommitByLabel ||
                            step == Step::kCancel || step == Step::kUnknownLabel;
    if ((needs_open && open.empty()) || (step == Step::kAgain && settled.empty())) {
      step = Step::kReserve;
    }
    const std::string at = " now=" + std::to_string(now);

    if (step == Step::kTime) {
      const int how = pick_whole_range(0, 8);
      if (how < 5) {
        now += pick_whole_range<Micros>(0, 400);
      } else if (how < 7) {
        now +=
            pick_whole_range<Micros>(0, 6'001);  // past every period: windows roll, buckets refill
      } else {
        now = std::max<Micros>(0, now - pick_whole_range<Micros>(0, 1'500));  // back in time
      }
      continue;
    }

    if (step == Step::kCheck) {
      std::string text = "check_all" + at;
      const std::vector<KeyedLimit> checks = keyed(pick_target(), text);
      const std::int64_t cost = pick_whole_range<std::int64_t>(0, 4);
      text += " cost=" + std::to_string(cost);
      const auto want =
          all.on_all(text, [&](Store& store) { return store.check_all(checks, cost, now); });
      if (!want) all.fail("the memory store refused a check");
      continue;
    }

    if (step == Step::kReserve) {
      std::string text = "reserve" + at;
      const std::vector<RedisTestLayer>& layers = pick_target();
      const std::vector<KeyedLimit> checks = keyed(layers, text);
      const std::int64_t cost = pick_whole_range<std::int64_t>(0, 4);
      Made made;
      made.id = new_reservation_id();
      for (std::size_t j = 0; j < layers.size(); ++j) {
        made.labels.push_back(layers[j].label);
        made.estimates.push_back(cost_of(checks[j], cost));
        made.metered.push_back(pick_whole_range(0, 3) == 0);
      }
      std::vector<ReservedLayer> reserved;  // views of made.labels, complete by now
      for (std::size_t j = 0; j < layers.size(); ++j) {
        reserved.push_back({made.labels[j], made.metered[j]});
        text += std::string(" ") + (made.metered[j] ? "metered:" : "") + made.labels[j];
      }
      text += " cost=" + std::to_string(cost) + " id=" + made.id;
      const ReserveSpec spec{.id = made.id, .ttl = std::chrono::hours(1), .layers = reserved};
      const Result<StoreRequest> request = StoreRequest::make_reserve(checks, cost, now, spec);
      if (!request) all.fail("make_reserve: " + request.error().message);
      const auto want =
          all.on_all(text, [&](Store& store) { return store.decide_and_wait(*request); });
      if (!want) all.fail("the memory store refused a reservation");
      if (all_allowed(*want)) open.push_back(std::move(made));
      continue;
    }

    if (step == Step::kCharge) {
      // Each layer charged without a check, 0 to 3 past what a check could admit at once: into
      // debt and, charged again, up to its bound. Nothing is refused.
      std::string text = "charge" + at;
      const std::vector<RedisTestLayer>& layers = pick_target();
      std::int64_t most = 0;
      std::vector<KeyedLimit> checks;
      for (const RedisTestLayer& layer : layers) {
        const std::int64_t room = std::max(layer.limit->limit(), layer.limit->burst());
        most = std::max(most, room);
        const std::int64_t own = pick_whole_range(0, 3) == 0
                                     ? pick_whole_range<std::int64_t>(0, room + 4)
                                     : kRequestCost;
        checks.push_back({layer.key, layer.limit, own});
        text += " " + layer.key + (own == kRequestCost ? "" : "@" + std::to_string(own));
      }
      const std::int64_t cost = pick_whole_range<std::int64_t>(0, most + 4);
      text += " cost=" + std::to_string(cost);
      const Result<StoreRequest> request =
          StoreRequest::make(checks, cost, now, Operation::kCharge);
      if (!request) all.fail("make(kCharge): " + request.error().message);
      const auto want =
          all.on_all(text, [&](Store& store) { return store.decide_and_wait(*request); });
      if (!want) all.fail("the memory store refused a charge");
      if (want->size() != checks.size() || !all_allowed(*want)) {
        all.fail("a charge not allowed on every key");
      }
      continue;
    }

    if (step == Step::kAgain) {  // a second settlement of a settled id: a conflict everywhere
      const Made& made = settled[static_cast<std::size_t>(
          pick_whole_range<int>(0, static_cast<int>(settled.size())))];
      const bool cancel = pick_whole_range(0, 2) == 0;
      const std::int64_t cost = pick_whole_range<std::int64_t>(0, 5);
      const Settlement settlement{.id = made.id, .cancel = cancel, .cost = cost, .now = now};
      const auto want = all.on_all(
          "settle again " + made.id + (cancel ? " cancel" : " cost=" + std::to_string(cost)) + at,
          [&](Store& store) { return store.settle_and_wait(settlement); });
      if (want || want.error().code != Errc::kConflict) all.fail("expected kConflict");
      continue;
    }

    if (step == Step::kUnknownId) {
      const std::string id = new_reservation_id();
      const Settlement settlement{.id = id, .cost = 1, .now = now};
      const auto want = all.on_all("settle unknown " + id + at,
                                   [&](Store& store) { return store.settle_and_wait(settlement); });
      if (want || want.error().code != Errc::kNotFound) all.fail("expected kNotFound");
      continue;
    }

    // The others settle (or try to settle) an open reservation.
    const std::size_t index =
        static_cast<std::size_t>(pick_whole_range<int>(0, static_cast<int>(open.size())));
    const Made& made = open[index];
    std::vector<LayerCost> costs;
    std::optional<std::int64_t> single;
    bool cancel = false;
    if (step == Step::kUnknownLabel) {
      // Refused, changing nothing: the reservation stays open, and a valid settlement of it (now
      // or later) still works.
      if (pick_whole_range(0, 2) == 0) costs.push_back({made.labels.front(), 0});
      costs.push_back({"no-such-layer", 1});
      if (pick_whole_range(0, 2) == 0) std::reverse(costs.begin(), costs.end());
      const Settlement settlement{.id = made.id, .costs = costs, .now = now};
      const auto want = all.on_all("settle " + made.id + " naming an unknown label" + at,
                                   [&](Store& store) { return store.settle_and_wait(settlement); });
      if (want || want.error().code != Errc::kInvalidArgument) {
        all.fail("expected kInvalidArgument");
      }
      if (pick_whole_range(0, 2) == 0) continue;
      costs.clear();
      single = estimate_of_cost(made);
    } else if (step == Step::kCommit) {
      const std::int64_t estimate = estimate_of_cost(made);
      const int fate = pick_whole_range(0, 3);
      single = fate == 0
                   ? (estimate == 0 ? 0 : pick_whole_range<std::int64_t>(0, estimate))  // below
               : fate == 1 ? estimate                                                   // at
                           : estimate + pick_whole_range<std::int64_t>(1, 5);  // above: debt
    } else if (step == Step::kCommitByLabel) {
      for (std::size_t j = 0; j < made.labels.size(); ++j) {
        if (pick_whole_range(0, 2) == 0) {
          costs.push_back(
              {made.labels[j], pick_whole_range<std::int64_t>(0, made.estimates[j] + 4)});
        }
      }
      if (costs.empty()) {
        costs.push_back(
            {made.labels.back(), pick_whole_range<std::int64_t>(0, made.estimates.back() + 4)});
      }
      if (pick_whole_range(0, 2) == 0) std::reverse(costs.begin(), costs.end());
      if (pick_whole_range(0, 3) == 0)
        single = pick_whole_range<std::int64_t>(0, estimate_of_cost(made) + 4);
    } else {  // kCancel: every layer back to 0, whatever else the settlement says
      cancel = true;
      if (pick_whole_range(0, 3) == 0)
        costs.push_back({made.labels.front(), pick_whole_range<std::int64_t>(0, 5)});
      if (pick_whole_range(0, 3) == 0) single = pick_whole_range<std::int64_t>(0, 5);
    }
    std::string text = "settle " + made.id + (cancel ? " cancel" : "");
    if (single) text += " cost=" + std::to_string(*single);
    for (const LayerCost& c : costs) {
      text += " " + std::string(c.label) + "=" + std::to_string(c.cost);
    }
    const Settlement settlement{
        .id = made.id, .cancel = cancel, .cost = single, .costs = costs, .now = now};
    const auto want =
        all.on_all(text + at, [&](Store& store) { return store.settle_and_wait(settlement); });
    if (!want) all.fail("the memory store refused to settle an open reservation");
    if (want->size() != made.labels.size()) all.fail("not one settled layer per layer");
    if (cancel) {
      for (const SettledLayer& layer : *want) {
        if (layer.actual != 0) all.fail("a cancel with an actual cost");
      }
    }
    settled.push_back(std::move(open[index]));
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(index));
  }
}

// Runs `property` for `cases` cases (RC_PARAMS' seed applies; its max_success does not): every
// case opens its own stores and keys, so the count is set per test.
template <typename Property>
void check_cases(int cases, const Property& property) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = cases;
  const rc::detail::TestResult result = rc::detail::checkTestable(property, metadata, params);
  if (!result.is<rc::detail::SuccessResult>()) {
    std::ostringstream message;
    rc::detail::printResultMessage(result, message);
    FAIL() << message.str();
  }
}

TEST(RedisReservation, MemoryAndRedisAnswerAlike) {
  check_cases(250, [] { reservations_like_memory(false); });
}

TEST(RedisReservationCluster, MemoryRedisAndClusterAnswerAlike) {
  check_cases(120, [] { reservations_like_memory(true); });
}

// ------------------------------------------------------------------------------------------------
// Directed tests: a request layer (1 per request) and a metered token layer.
// ------------------------------------------------------------------------------------------------

const Limit kRedisRequests = *Limit::make(Algorithm::kFixedWindow, 10, kMicrosPerHour);
const Limit kRedisTokens = *Limit::make(Algorithm::kSlidingLog, 1'000, kMicrosPerHour);
constexpr Micros kRedisNow = 5 * kMicrosPerHour;  // a window's start

struct Reserved {
  std::string id;       // the id asked for, whether admitted or not
  Decisions decisions;  // empty when the store answered an error
  bool admitted() const { return !decisions.empty() && all_allowed(decisions); }
};

// Reserves `tokens` on `rpm` (kRedisRequests, the request's cost 1) and `tpm` (kRedisTokens,
// metered).
Reserved reserve_tokens(Store& store, const std::string& rpm, const std::string& tpm,
                        std::int64_t tokens, std::optional<Micros> now,
                        std::chrono::milliseconds ttl = std::chrono::minutes(1)) {
  Reserved reserved{.id = new_reservation_id(), .decisions = {}};
  const KeyedLimit keys[] = {{rpm, &kRedisRequests}, {tpm, &kRedisTokens, tokens}};
  const ReservedLayer layers[] = {{"rpm", false}, {"tpm", true}};
  const ReserveSpec spec{.id = reserved.id, .ttl = ttl, .layers = layers};
  const Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, now, spec);
  EXPECT_TRUE(request.has_value()) << (request ? "" : request.error().message);
  if (!request) return reserved;
  Result<Decisions> answer = store.decide_and_wait(*request);
  EXPECT_TRUE(answer.has_value()) << (answer ? "" : answer.error().message);
  if (answer) reserved.decisions = std::move(*answer);
  return reserved;
}

// What `key` has left under `limit` (a peek); -1 (and a failure) on an error.
std::int64_t remaining(Store& store, const std::string& key, const Limit& limit,
                       std::optional<Micros> now) {
  const Result<Decision> peek = store.check(key, limit, 0, now);
  EXPECT_TRUE(peek.has_value()) << key << ": " << (peek ? "" : peek.error().message);
  return peek ? peek->remaining : -1;
}

// The number of keys on `node` (DBSIZE); -1 (and a failure) if redis-cli said something else.
long long key_count(const testing::RedisServer& node) {
  const std::string answer = node.cli("DBSIZE");
  try {
    return std::stoll(answer);
  } catch (const std::exception&) {
    ADD_FAILURE() << "DBSIZE on port " << node.port() << " answered \"" << answer << "\"";
    return -1;
  }
}

TEST(RedisReservation, AnUnsettledReservationExpiresByRedisClockWithItsEstimateCharged) {
  const std::string prefix = reservation_prefix();
  std::unique_ptr<RedisStore> store = open_reservation_store(reservation_server().url(), prefix);
  ASSERT_TRUE(store != nullptr);
  // The same explicit `now` throughout: only Redis' own clock (PX) can expire the short one.
  const Reserved brief = reserve_tokens(*store, "rpm", "tpm", 600, kRedisNow, 300ms);
  const Reserved lasting =
      reserve_tokens(*store, "rpm", "tpm", 100, kRedisNow, std::chrono::minutes(1));
  // And one on the server's clock (no `now`).
  const Reserved unclocked =
      reserve_tokens(*store, "rpm-clock", "tpm-clock", 600, std::nullopt, 300ms);
  ASSERT_TRUE(brief.admitted());
  ASSERT_TRUE(lasting.admitted());
  ASSERT_TRUE(unclocked.admitted());
  // Redis' clock ends the two short records (300 ms); the lasting one stays.
  const auto record_exists = [&](const std::string& id) {
    return reservation_server().cli("EXISTS '" + prefix + ":rsv:{" + id + "}'") == "1\n";
  };
  ASSERT_TRUE(record_exists(lasting.id));
  ASSERT_TRUE(
      testing::wait_until([&] { return !record_exists(brief.id) && !record_exists(unclocked.id); },
                          std::chrono::seconds(10)))
      << "the records past their ttl are still in Redis";
  ASSERT_TRUE(record_exists(lasting.id));

  const Result<Settled> late =
      store->settle_and_wait({.id = brief.id, .cost = 0, .now = kRedisNow});
  ASSERT_FALSE(late.has_value()) << "settled after its ttl: " << show_redis(late);
  EXPECT_EQ(late.error().code, Errc::kNotFound) << late.error().message;
  const Result<Settled> cancelled =
      store->settle_and_wait({.id = brief.id, .cancel = true, .now = kRedisNow});
  ASSERT_FALSE(cancelled.has_value()) << "cancelled after its ttl: " << show_redis(cancelled);
  EXPECT_EQ(cancelled.error().code, Errc::kNotFound) << cancelled.error().message;
  const Result<Settled> late_unclocked = store->settle_and_wait({.id = unclocked.id, .cost = 0});
  ASSERT_FALSE(late_unclocked.has_value())
      << "settled after its ttl: " << show_redis(late_unclocked);
  EXPECT_EQ(late_unclocked.error().code, Errc::kNotFound) << late_unclocked.error().message;

  // The expired estimates stay charged: 1000 - 600 - 100 tokens and 10 - 2 requests left.
  EXPECT_EQ(remaining(*store, "tpm", kRedisTokens, kRedisNow), 300);
  EXPECT_EQ(remaining(*store, "rpm", kRedisRequests, kRedisNow), 8);
  EXPECT_EQ(remaining(*store, "tpm-clock", kRedisTokens, std::nullopt), 400);

  // The one still within its ttl settles: 50 of its 100 tokens come back.
  const Result<Settled> settled =
      store->settle_and_wait({.id = lasting.id, .cost = 50, .now = kRedisNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  ASSERT_EQ(settled->size(), 2u);
  EXPECT_EQ((*settled)[1].label, "tpm");
  EXPECT_EQ((*settled)[1].refunded, 50);
  EXPECT_EQ((*settled)[1].after.remaining, 350);
  EXPECT_EQ(remaining(*store, "tpm", kRedisTokens, kRedisNow), 350);
}

TEST(RedisReservation, TwoSettlementsRacingForOneIdSettleItOnce) {
  const std::string prefix = reservation_prefix();
  std::unique_ptr<RedisStore> one = open_reservation_store(reservation_server().url(), prefix);
  std::unique_ptr<RedisStore> two = open_reservation_store(reservation_server().url(), prefix);
  ASSERT_TRUE(one != nullptr && two != nullptr);
  for (int round = 0; round < 20; ++round) {
    const std::string rpm = "race-rpm-" + std::to_string(round);
    const std::string tpm = "race-tpm-" + std::to_string(round);
    const Reserved reserved = reserve_tokens(*one, rpm, tpm, 600, kRedisNow);
    ASSERT_TRUE(reserved.admitted()) << "round " << round;
    // Even rounds: both settlements through one store object; odd rounds: one through each.
    const std::array<Store*, 2> settlers = {one.get(), round % 2 == 0 ? one.get() : two.get()};
    std::array<Result<Settled>, 2> answers;
    std::latch start(2);
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
          start.arrive_and_wait();
          // Thread 0 commits 100 of the 600 tokens; thread 1 cancels.
          answers[t] = settlers[t]->settle_and_wait(
              {.id = reserved.id, .cancel = t == 1, .cost = 100, .now = kRedisNow});
        });
      }
    }  // joined
    ASSERT_NE(answers[0].has_value(), answers[1].has_value())
        << "round " << round << ": exactly one settlement must win; commit "
        << show_redis(answers[0]) << ", cancel " << show_redis(answers[1]);
    const std::size_t won = answers[0].has_value() ? 0 : 1;
    const Result<Settled>& lost = answers[1 - won];
    EXPECT_EQ(lost.error().code, Errc::kConflict) << "round " << round << ": " << show_redis(lost);
    // Only the winner's settlement counts: the commit leaves 900 tokens and 9 requests, the
    // cancel gives everything back.
    EXPECT_EQ(remaining(*two, tpm, kRedisTokens, kRedisNow), won == 0 ? 900 : 1'000)
        << "round " << round;
    EXPECT_EQ(remaining(*one, rpm, kRedisRequests, kRedisNow), won == 0 ? 9 : 10)
        << "round " << round;
  }
}

TEST(RedisReservation, AReservationMadeThroughOneStoreSettlesThroughAnother) {
  const std::string prefix = reservation_prefix();
  std::unique_ptr<RedisStore> maker = open_reservation_store(reservation_server().url(), prefix);
  std::unique_ptr<RedisStore> settler = open_reservation_store(reservation_server().url(), prefix);
  ASSERT_TRUE(maker != nullptr && settler != nullptr);
  const Reserved reserved = reserve_tokens(*maker, "rpm", "tpm", 600, kRedisNow);
  ASSERT_TRUE(reserved.admitted());

  const Result<Settled> settled =
      settler->settle_and_wait({.id = reserved.id, .cost = 250, .now = kRedisNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  testing::expect_committed_at_250(*settled);
  EXPECT_EQ(remaining(*maker, "tpm", kRedisTokens, kRedisNow), 750);

  // Settled once, whichever store object asks again.
  const Result<Settled> again =
      maker->settle_and_wait({.id = reserved.id, .cancel = true, .now = kRedisNow});
  ASSERT_FALSE(again.has_value()) << show_redis(again);
  EXPECT_EQ(again.error().code, Errc::kConflict) << again.error().message;
  const Result<Settled> again_there =
      settler->settle_and_wait({.id = reserved.id, .cost = 0, .now = kRedisNow});
  ASSERT_FALSE(again_there.has_value()) << show_redis(again_there);
  EXPECT_EQ(again_there.error().code, Errc::kConflict) << again_there.error().message;
  EXPECT_EQ(remaining(*settler, "tpm", kRedisTokens, kRedisNow), 750);

  // The other way round, above the estimate: 700 reserved through the second, 1500 used.
  const Reserved big = reserve_tokens(*settler, "rpm", "tpm", 700, kRedisNow);
  ASSERT_TRUE(big.admitted());
  const Result<Settled> debt =
      maker->settle_and_wait({.id = big.id, .cost = 1'500, .now = kRedisNow});
  ASSERT_TRUE(debt.has_value()) << debt.error().message;
  ASSERT_EQ(debt->size(), 2u);
  EXPECT_EQ((*debt)[1].charged, 800);
  EXPECT_EQ((*debt)[1].refunded, 0);
  EXPECT_FALSE((*debt)[1].after.allowed) << "a key in debt denies even a peek";
  EXPECT_EQ(remaining(*settler, "tpm", kRedisTokens, kRedisNow), 0);
  const Result<Settled> unknown =
      settler->settle_and_wait({.id = "never-made", .cost = 1, .now = kRedisNow});
  ASSERT_FALSE(unknown.has_value()) << show_redis(unknown);
  EXPECT_EQ(unknown.error().code, Errc::kNotFound) << unknown.error().message;
}

TEST(RedisReservation, ADeniedReservationLeavesNothingBehind) {
  testing::RedisServer own;  // alone on it: DBSIZE counts this test's keys only
  std::unique_ptr<RedisStore> store = open_reservation_store(own.url(), reservation_prefix());
  ASSERT_TRUE(store != nullptr);
  const Reserved first = reserve_tokens(*store, "rpm", "tpm", 600, kRedisNow);
  ASSERT_TRUE(first.admitted());
  const long long before = key_count(own);
  EXPECT_GE(before, 2) << "the two layers' keys";

  // 600 tokens do not fit in the 400 left: denied by tpm; rpm is reported uncharged.
  const Reserved denied = reserve_tokens(*store, "rpm", "tpm", 600, kRedisNow);
  ASSERT_EQ(denied.decisions.size(), 2u);
  EXPECT_FALSE(denied.admitted());
  EXPECT_TRUE(denied.decisions[0].allowed);
  EXPECT_EQ(denied.decisions[0].remaining, 9) << "the request layer as it stands, uncharged";
  EXPECT_FALSE(denied.decisions[1].allowed);
  EXPECT_EQ(denied.decisions[1].remaining, 400);
  // On keys never seen, with a cost that can never fit: no key for either layer, no record.
  const Reserved never = reserve_tokens(*store, "rpm-fresh", "tpm-fresh", 1'001, kRedisNow);
  ASSERT_EQ(never.decisions.size(), 2u);
  EXPECT_FALSE(never.admitted());
  EXPECT_EQ(never.decisions[1].retry_after, kNever);
  EXPECT_EQ(key_count(own), before) << "a denied reservation left a key (a record, or a charge)";

  EXPECT_EQ(remaining(*store, "rpm", kRedisRequests, kRedisNow), 9);
  EXPECT_EQ(remaining(*store, "tpm", kRedisTokens, kRedisNow), 400);
  for (const Reserved* refused : {&denied, &never}) {
    const Result<Settled> settled =
        store->settle_and_wait({.id = refused->id, .cancel = true, .now = kRedisNow});
    ASSERT_FALSE(settled.has_value()) << "a denied reservation was kept: " << show_redis(settled);
    EXPECT_EQ(settled.error().code, Errc::kNotFound) << settled.error().message;
  }
  // The admitted one still settles.
  const Result<Settled> settled =
      store->settle_and_wait({.id = first.id, .cost = 100, .now = kRedisNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  EXPECT_EQ(remaining(*store, "tpm", kRedisTokens, kRedisNow), 900);
}

// Redis' bound on reservation records is its own maxmemory (docs/SPEC.md §5.3): at it, under
// the default maxmemory-policy noeviction, a reserve is refused as a full store (kStoreFull, so
// the server answers 503 whatever on_error says), charges nothing and keeps no record; below it
// again, reserves work.
TEST(RedisReservation, AtMaxmemoryAReserveIsRefusedAsAFullStoreAndChargesNothing) {
  testing::RedisServer own("maxmemory-policy noeviction");
  std::unique_ptr<RedisStore> store = open_reservation_store(own.url(), reservation_prefix());
  ASSERT_TRUE(store != nullptr);
  const Reserved first = reserve_tokens(*store, "rpm", "tpm", 600, kRedisNow);
  ASSERT_TRUE(first.admitted());
  const long long keys_before = key_count(own);
  ASSERT_EQ(own.cli("CONFIG SET maxmemory 1").substr(0, 2),
            "OK");  // below what it uses: at the bound

  const std::string refused_id = new_reservation_id();
  const KeyedLimit keys[] = {{"rpm", &kRedisRequests}, {"tpm", &kRedisTokens, 100}};
  const ReservedLayer layers[] = {{"rpm", false}, {"tpm", true}};
  const ReserveSpec spec{.id = refused_id, .ttl = std::chrono::minutes(1), .layers = layers};
  const Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, kRedisNow, spec);
  ASSERT_TRUE(request.has_value());
  const Result<Decisions> full = store->decide_and_wait(*request);
  ASSERT_FALSE(full.has_value()) << "a reserve was kept by a Redis at its maxmemory";
  EXPECT_EQ(full.error().code, Errc::kStoreFull) << full.error().message;
  EXPECT_NE(full.error().message.find("maxmemory"), std::string::npos) << full.error().message;

  ASSERT_EQ(own.cli("CONFIG SET maxmemory 0").substr(0, 2), "OK");
  EXPECT_EQ(key_count(own), keys_before) << "the refused reserve left a key";
  EXPECT_EQ(remaining(*store, "rpm", kRedisRequests, kRedisNow), 9) << "the refusal charged";
  EXPECT_EQ(remaining(*store, "tpm", kRedisTokens, kRedisNow), 400) << "the refusal charged";
  const Result<Settled> settled =
      store->settle_and_wait({.id = refused_id, .cancel = true, .now = kRedisNow});
  ASSERT_FALSE(settled.has_value());
  EXPECT_EQ(settled.error().code, Errc::kNotFound) << settled.error().message;
  EXPECT_TRUE(reserve_tokens(*store, "rpm", "tpm", 100, kRedisNow).admitted());
}

// A user key whose stored key (under `limit`, with the store's prefix) is in hash slot `slot`.
std::string reservation_key_on(const RedisStore& store, const Limit& limit, const std::string& stem,
                               std::uint16_t slot) {
  for (int i = 0; i < 2'000'000; ++i) {
    const std::string key = stem + std::to_string(i);
    if (redis::key_slot(store.storage_key(key, limit)) == slot) return key;
  }
  throw std::runtime_error("no key found for slot " + std::to_string(slot));
}

// The keys of every primary (DBSIZE), in the order of primaries().
std::vector<long long> keys_per_primary(const testing::RedisCluster& cluster) {
  std::vector<long long> counts;
  for (const testing::RedisServer* primary : cluster.primaries()) {
    counts.push_back(key_count(*primary));
  }
  return counts;
}

// The request layer's key on one primary, the token layer's on another: the token slot denies,
// the request slot admits (without the dry run: is charged, then refunded). Nothing is left on
// any primary, and the id is unknown.
void expect_denial_on_one_slot_leaves_nothing(bool dry_run_first) {
  testing::RedisCluster& cluster = testing::shared_cluster();
  std::unique_ptr<RedisStore> store =
      open_reservation_store(cluster.url(), reservation_prefix(), dry_run_first);
  ASSERT_TRUE(store != nullptr);
  const std::string rpm = reservation_key_on(*store, kRedisRequests, "rpm", 100);
  const std::string tpm = reservation_key_on(*store, kRedisTokens, "tpm", 9000);
  ASSERT_NE(cluster.owner_of(100), cluster.owner_of(9000));
  const Reserved first = reserve_tokens(*store, rpm, tpm, 600, kRedisNow);
  ASSERT_TRUE(first.admitted());
  const std::vector<long long> before = keys_per_primary(cluster);

  const Reserved denied = reserve_tokens(*store, rpm, tpm, 600, kRedisNow);
  ASSERT_EQ(denied.decisions.size(), 2u);
  EXPECT_FALSE(denied.admitted());
  EXPECT_TRUE(denied.decisions[0].allowed);
  EXPECT_EQ(denied.decisions[0].remaining, 9) << "the request layer as it stands, uncharged";
  EXPECT_FALSE(denied.decisions[1].allowed);
  EXPECT_EQ(denied.decisions[1].remaining, 400);
  EXPECT_EQ(keys_per_primary(cluster), before)
      << "a denied reservation left a key (a record, or a charge) on a primary";
  EXPECT_EQ(remaining(*store, rpm, kRedisRequests, kRedisNow), 9)
      << "the admitting slot was not refunded";
  EXPECT_EQ(remaining(*store, tpm, kRedisTokens, kRedisNow), 400);
  const Result<Settled> unknown =
      store->settle_and_wait({.id = denied.id, .cancel = true, .now = kRedisNow});
  ASSERT_FALSE(unknown.has_value()) << "a denied reservation was kept: " << show_redis(unknown);
  EXPECT_EQ(unknown.error().code, Errc::kNotFound) << unknown.error().message;

  // The admitted one settles on both slots: 500 of its 600 tokens back, its request kept.
  const Result<Settled> settled =
      store->settle_and_wait({.id = first.id, .cost = 100, .now = kRedisNow});
  ASSERT_TRUE(settled.has_value()) << settled.error().message;
  ASSERT_EQ(settled->size(), 2u);
  EXPECT_EQ((*settled)[0].actual, 1);
  EXPECT_EQ((*settled)[0].after.remaining, 9);
  EXPECT_EQ((*settled)[1].refunded, 500);
  EXPECT_EQ((*settled)[1].after.remaining, 900);
  EXPECT_EQ(remaining(*store, tpm, kRedisTokens, kRedisNow), 900);
}

// ------------------------------------------------------------------------------------------------
// Refunds on busy buckets (docs/SPEC.md §2.1): a bucket gives back the unused part of a
// reservation even after other charges, on every backend alike.
// ------------------------------------------------------------------------------------------------

// Reserves `estimate` of `key` under `limit`, one metered layer; the reservation's id, or "" (and
// a failure) when it was not admitted.
std::string reserve_bucket(Store& store, const std::string& key, const Limit& limit,
                           std::int64_t estimate, Micros now) {
  const std::string id = new_reservation_id();
  const KeyedLimit keys[] = {{key, &limit, estimate}};
  const ReservedLayer layers[] = {{"bucket", true}};
  const ReserveSpec spec{.id = id, .ttl = std::chrono::minutes(1), .layers = layers};
  const Result<StoreRequest> request = StoreRequest::make_reserve(keys, 1, now, spec);
  EXPECT_TRUE(request.has_value()) << (request ? "" : request.error().message);
  if (!request) return "";
  const Result<Decisions> answer = store.decide_and_wait(*request);
  EXPECT_TRUE(answer.has_value() && all_allowed(*answer)) << show_redis(answer);
  return answer && all_allowed(*answer) ? id : "";
}

// On an idle bucket of 10 per second, all at one instant (no refill): a reservation of 5, two
// checks of 1, the reservation settled at 1: it gives back its whole unused part, 4, although the
// key was charged after it (the key then has 10 - 1 - 2 = 7 left, as had it been charged 1 from
// the start). Then a reservation of 4 on the busy key, a check of 1, settled at 0: the state
// proves only that the key was 1 from idle since (what the first refund left of the least debt a
// charge found), so it gives back 1 of 4: 7 - 4 - 1 + 1 = 3 left, never more than the 6 a key
// charged 0 would have. Last, a reservation whose key is reset and then charged in full at an
// earlier `now` gives nothing back.
void expect_busy_bucket_refunds(Store& store, const std::string& key, const Limit& limit) {
  const Micros now = kRedisNow;
  const std::string first = reserve_bucket(store, key, limit, 5, now);
  ASSERT_FALSE(first.empty());
  for (int i = 0; i < 2; ++i) {
    const Result<Decision> d = store.check(key, limit, 1, now);
    ASSERT_TRUE(d.has_value() && d->allowed) << show_redis(d);
  }
  const Result<Settled> one = store.settle_and_wait({.id = first, .cost = 1, .now = now});
  ASSERT_TRUE(one.has_value()) << show_redis(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].refunded, 4) << show_redis(one);
  EXPECT_EQ((*one)[0].after.remaining, 7) << show_redis(one);
  EXPECT_EQ(remaining(store, key, limit, now), 7);

  const std::string second = reserve_bucket(store, key, limit, 4, now);
  ASSERT_FALSE(second.empty());
  const Result<Decision> d = store.check(key, limit, 1, now);
  ASSERT_TRUE(d.has_value() && d->allowed) << show_redis(d);
  const Result<Settled> two = store.settle_and_wait({.id = second, .cost = 0, .now = now});
  ASSERT_TRUE(two.has_value()) << show_redis(two);
  ASSERT_EQ(two->size(), 1u);
  EXPECT_EQ((*two)[0].refunded, 1) << show_redis(two);
  EXPECT_EQ(remaining(store, key, limit, now), 3);

  // The key reset while a reservation is open, then charged at an earlier `now` (a clock that
  // went back): another busy stretch, so nothing is given back after those charges.
  const std::string third = reserve_bucket(store, key, limit, 2, now);
  ASSERT_FALSE(third.empty());
  const KeyedLimit reset_keys[] = {{key, &limit}};
  const Result<StoreRequest> reset =
      StoreRequest::make(reset_keys, 0, std::nullopt, Operation::kReset);
  ASSERT_TRUE(reset.has_value()) << reset.error().message;
  ASSERT_TRUE(store.decide_and_wait(*reset).has_value());
  const Micros earlier = now - 100;
  for (int i = 0; i < 2; ++i) {
    const Result<Decision> c = store.check(key, limit, 5, earlier);
    ASSERT_TRUE(c.has_value() && c->allowed) << show_redis(c);
  }
  const Result<Settled> three = store.settle_and_wait({.id = third, .cost = 0, .now = earlier});
  ASSERT_TRUE(three.has_value()) << show_redis(three);
  EXPECT_EQ((*three)[0].refunded, 0) << show_redis(three);
  EXPECT_EQ(remaining(store, key, limit, earlier), 0);
}

TEST(RedisReservationCluster, ABusyBucketGivesBackTheUnusedPartOnMemoryRedisAndCluster) {
  const std::string prefix = reservation_prefix();
  MemoryStore memory;
  std::unique_ptr<RedisStore> redis = open_reservation_store(reservation_server().url(), prefix);
  std::unique_ptr<RedisStore> cluster =
      open_reservation_store(testing::shared_cluster().url(), prefix);
  ASSERT_TRUE(redis != nullptr && cluster != nullptr);
  for (Algorithm algorithm : {Algorithm::kGcra, Algorithm::kTokenBucket}) {
    const Limit limit = *Limit::make(algorithm, 10, kMicrosPerSecond);
    const std::string key = std::string("busy-") + std::string(algorithm_name(algorithm));
    for (Store* store : std::initializer_list<Store*>{&memory, redis.get(), cluster.get()}) {
      SCOPED_TRACE(std::string(algorithm_name(algorithm)) + (store == &memory       ? " memory"
                                                             : store == redis.get() ? " redis"
                                                                                    : " cluster"));
      expect_busy_bucket_refunds(*store, key, limit);
    }
  }
}

// A bucket's value as written before the busy stretch was kept (gcra: three doubles; token_bucket:
// two) still decides as it did, and the next charge rewrites it whole; a refund after other
// charges then gives nothing back until the key is next idle (what such a value allows), while an
// untouched one is still exact.
TEST(RedisReservation, ABucketValueWrittenBeforeTheBusyStretchStillDecides) {
  const std::string prefix = reservation_prefix();
  std::unique_ptr<RedisStore> store = open_reservation_store(reservation_server().url(), prefix);
  ASSERT_TRUE(store != nullptr);
  const Micros now = kRedisNow;
  const Micros tee = kMicrosPerSecond / 10;
  struct Old {
    Algorithm algorithm;
    std::string format;
    std::vector<std::int64_t> fields;  // 3 used of 10: tat 3 T ahead (gcra), 7 tokens left
  };
  const Old olds[] = {{Algorithm::kGcra, "<ddd", {now + 3 * tee, 0, now}},
                      {Algorithm::kTokenBucket, "<dd", {7 * 100'000, now}}};
  for (const Old& old : olds) {
    SCOPED_TRACE(algorithm_name(old.algorithm));
    const Limit limit = *Limit::make(old.algorithm, 10, kMicrosPerSecond);
    // Token bucket units: one token is period_units() units.
    std::vector<std::int64_t> fields = old.fields;
    if (old.algorithm == Algorithm::kTokenBucket) fields[0] = 7 * limit.period_units();
    const std::string key = std::string("old-") + std::string(algorithm_name(old.algorithm));
    const std::string stored = store->storage_key(key, limit);
    std::string args;
    for (std::int64_t f : fields) args += " " + std::to_string(f);
    const std::string set = reservation_server().cli(
        "EVAL \"return redis.call('SET', KEYS[1], struct.pack('" + old.format + "'" +
        (fields.size() == 3 ? ", ARGV[1], ARGV[2], ARGV[3]" : ", ARGV[1], ARGV[2]") + "))\" 1 " +
        stored + args);
    ASSERT_EQ(set, "OK\n");
    EXPECT_EQ(remaining(*store, key, limit, now), 7);
    const std::string id = reserve_bucket(*store, key, limit, 2, now);
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(reservation_server().cli("STRLEN " + stored),
              old.algorithm == Algorithm::kGcra ? "40\n" : "32\n");
    const Result<Decision> d = store->check(key, limit, 1, now);
    ASSERT_TRUE(d.has_value() && d->allowed) << show_redis(d);
    const Result<Settled> touched = store->settle_and_wait({.id = id, .cost = 0, .now = now});
    ASSERT_TRUE(touched.has_value()) << show_redis(touched);
    EXPECT_EQ((*touched)[0].refunded, 0) << show_redis(touched);
    EXPECT_EQ(remaining(*store, key, limit, now), 4);
    const std::string alone = reserve_bucket(*store, key, limit, 3, now);
    ASSERT_FALSE(alone.empty());
    const Result<Settled> untouched = store->settle_and_wait({.id = alone, .cost = 1, .now = now});
    ASSERT_TRUE(untouched.has_value()) << show_redis(untouched);
    EXPECT_EQ((*untouched)[0].refunded, 2) << show_redis(untouched);
    EXPECT_EQ(remaining(*store, key, limit, now), 3);
  }
}

TEST(RedisReservationCluster, ADenialOnOneSlotLeavesNothingWithTheDryRun) {
  expect_denial_on_one_slot_leaves_nothing(true);
}

TEST(RedisReservationCluster, ADenialOnOneSlotIsRefundedAndLeavesNothingWithoutTheDryRun) {
  expect_denial_on_one_slot_leaves_nothing(false);
}

}  // namespace
}  // namespace spillway
