// MemoryStore (spillway/memory_store.h): the in-process store. One ShardedTable per algorithm
// (src/memory/sharded_table.h) holds the keys' states; Impl decides single checks (one shard
// locked), all-or-nothing checks (the shards involved locked in address order, every key decided
// dry, committed only if all admit), reservations (16 locked shards of open records ordered by
// expiry, src/memory/reservation_record.h; tombstones of settled ids, src/memory/settled_ids.h),
// charges and resets; the key bound is a KeyBudget shared by the tables. Every answer is given
// before decide() returns (complete_inline). Times are the request's `now` or the clock's, in µs.
// Thread safety: every method from any thread; an optional task on the runtime sweeps idle keys.
#include "spillway/memory_store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "src/core/all_algorithms.h"
#include "src/core/inline_completion.h"
#include "src/core/metrics_text.h"
#include "src/core/reservation_errors.h"
#include "src/memory/key_budget.h"
#include "src/memory/reservation_record.h"
#include "src/memory/settled_ids.h"
#include "src/memory/sharded_table.h"

namespace spillway {
namespace {

// One ShardedTable per algorithm of the list, in list order: std::get<i> holds the states of
// kAlgorithms[i].
template <typename Indices>
struct TablesOf;
template <std::size_t... I>
struct TablesOf<std::index_sequence<I...>> {
  using type = std::tuple<memory::ShardedTable<core::StateOf<kAlgorithms[I]>>...>;
};
using Tables = TablesOf<std::make_index_sequence<kAlgorithmCount>>::type;

// Reservation ids looked up by string_view without a copy.
struct IdHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
};

}  // namespace

class MemoryStore::Impl {
 public:
  explicit Impl(const MemoryStoreOptions& options)
      : runtime_(options.runtime ? options.runtime : system_runtime()),
        clock_(options.clock ? options.clock : runtime_->wall_clock()),
        max_reservations_(options.max_reservations),
        budget_(options.max_keys),
        tables_(make_tables(shards(options), random_seed(),
                            std::make_index_sequence<kAlgorithmCount>{})),
        settled_ids_(options.max_settled_reservations) {
    if (options.sweep_interval.count() > 0) start_sweeper(*runtime_, options.sweep_interval);
  }

  Micros now() const { return clock_->now(); }

  Result<Decision> check(std::string_view key, const Limit& limit, Micros now, std::int64_t cost) {
    return with_table(limit.algorithm(), [&](auto& table) -> Result<Decision> {
      return table.check(key, limit, now, cost);
    });
  }

  // All-or-nothing over several keys, each charged its cost (its own, or `cost`): every shard
  // involved is locked (in address order, so two
  // requests can never wait on each other), every key is decided dry, and only if all admit are
  // they decided for real. New keys' places are taken from the budget first: a full store changes
  // nothing (after sweeping these shards once to make room, as a single check does).
  // With `marks`: an admitted request also leaves there each key's charge mark (a reservation).
  Result<Decisions> check_all(std::span<const KeyedLimit> checks, Micros now, std::int64_t cost,
                              std::vector<core::ChargeMark>* marks = nullptr) {
    struct Item {
      memory::TableKey key;
      const Limit* limit;
      std::int64_t cost;
    };
    // A policy checks a handful of keys: no allocation below eight.
    boost::container::small_vector<Item, 8> items;
    boost::container::small_vector<memory::SpinLock*, 8> shard_locks;
    for (const KeyedLimit& c : checks) {
      with_table(c.limit->algorithm(), [&](auto& table) {
        items.push_back({table.key_of(c.key, *c.limit), c.limit, cost_of(c, cost)});
        shard_locks.push_back(&table.lock_for(items.back().key));
        return 0;
      });
    }
    std::sort(shard_locks.begin(), shard_locks.end(), std::less<memory::SpinLock*>());
    shard_locks.erase(std::unique(shard_locks.begin(), shard_locks.end()), shard_locks.end());
    boost::container::small_vector<std::unique_lock<memory::SpinLock>, 8> locks;
    for (memory::SpinLock* m : shard_locks) locks.emplace_back(*m);

    // Sweeps come first (here, not while committing): a key counted as tracked must stay.
    const auto sweep_shards = [&](bool force) {
      for (const Item& item : items) {
        with_table(item.limit->algorithm(), [&](auto& table) {
          table.sweep_locked(item.key, now, force);
          return 0;
        });
      }
    };
    Decisions decisions;
    std::size_t new_keys = 0;
    const auto peek_all = [&] {
      decisions.clear();
      new_keys = 0;
      for (const Item& item : items) {
        with_table(item.limit->algorithm(), [&](auto& table) {
          bool tracked = false;
          decisions.push_back(table.peek_locked(item.key, *item.limit, now, item.cost, &tracked));
          if (decisions.back().allowed && item.cost > 0 && !tracked) ++new_keys;
          return 0;
        });
      }
    };
    sweep_shards(false);
    decisions.reserve(items.size());
    peek_all();
    if (!all_allowed(decisions)) {
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!decisions[i].allowed) continue;
        decisions[i] = with_table(items[i].limit->algorithm(), [&](auto& table) {
          return table.peek_locked(items[i].key, *items[i].limit, now, 0);
        });
      }
      return decisions;
    }
    if (new_keys > 0 && !budget_.take(new_keys)) {
      // Full: drop what is idle in these shards, count again (the decisions stay the same: an
      // idle key decides as an absent one), and try once more.
      sweep_shards(true);
      peek_all();
      if (new_keys > 0 && !budget_.take(new_keys)) return std::unexpected(budget_.full_error());
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      decisions[i] = with_table(items[i].limit->algorithm(), [&](auto& table) {
        const Decision d = table.commit_locked(items[i].key, *items[i].limit, now, items[i].cost);
        if (marks != nullptr) marks->push_back(table.mark_locked(items[i].key, *items[i].limit));
        return d;
      });
    }
    return decisions;
  }

  // Operation::kReserve: a check whose charges, when admitted, are kept under the spec's id.
  // A place among the open reservations is taken first: a full store charges nothing and answers
  // kStoreFull in O(1) (after dropping what has expired, which pops only expired entries).
  Result<Decisions> reserve(std::span<const KeyedLimit> checks, Micros now, std::int64_t cost,
                            const ReserveSpec& spec) {
    if (!take_open_place(now)) {
      return std::unexpected(
          Error{Errc::kStoreFull, "the reservation store is full: it holds its maximum of " +
                                      std::to_string(max_reservations_) +
                                      " open reservations (server.max_reservations); nothing was "
                                      "charged"});
    }
    std::vector<core::ChargeMark> marks;
    marks.reserve(checks.size());
    Result<Decisions> decisions = check_all(checks, now, cost, &marks);
    if (!decisions || !all_allowed(*decisions)) {
      open_reservations_.fetch_sub(1, std::memory_order_relaxed);
      return decisions;
    }
    Reservation kept;
    kept.expires_at = now + std::chrono::duration_cast<std::chrono::microseconds>(spec.ttl).count();
    for (std::size_t i = 0; i < checks.size(); ++i) {
      kept.keys.push_back({.key = std::string(checks[i].key),
                           .limit = *checks[i].limit,
                           .estimate = cost_of(checks[i], cost),
                           .mark = marks[i],
                           .label = std::string(spec.layers[i].label),
                           .metered = spec.layers[i].metered,
                           .hold = spec.layers[i].hold});
    }
    ReservationShard& shard = reservation_shard(spec.id);
    std::lock_guard hold(shard.mutex);
    expire_locked(shard, now);  // amortised O(1): each reservation is popped once
    const auto [at, made] = shard.open.try_emplace(std::string(spec.id), std::move(kept));
    if (!made) {
      open_reservations_.fetch_sub(1, std::memory_order_relaxed);
      return std::unexpected(Error{Errc::kInternal, "a reservation id was used twice"});
    }
    at->second.expiry = shard.by_expiry.emplace(at->second.expires_at, at->first);
    return decisions;
  }

  // Settles a reservation once (Store::settle); its shard's lock is held throughout, so that two
  // settlements of one id cannot both find it open (the tombstone is written before it is let go).
  Result<Settled> settle(const Settlement& settlement, Micros now) {
    ReservationShard& shard = reservation_shard(settlement.id);
    std::lock_guard hold(shard.mutex);
    auto found = shard.open.find(settlement.id);
    if (found != shard.open.end() && found->second.expires_at <= now) {
      drop_expired_locked(shard, found);
      found = shard.open.end();
    }
    if (found == shard.open.end()) {
      if (settled_ids_.holds(settled_hash(settlement.id), now)) {
        return std::unexpected(reservation_already_settled(settlement.id));
      }
      return std::unexpected(reservation_not_found(settlement.id));
    }
    Reservation& kept = found->second;
    std::vector<std::int64_t> actual;
    if (Result<void> resolved = memory::actual_costs(kept, settlement, actual); !resolved) {
      return std::unexpected(resolved.error());
    }
    Settled settled;
    settled.reserve(kept.keys.size());
    for (std::size_t i = 0; i < kept.keys.size(); ++i) {
      const Reservation::Key& k = kept.keys[i];
      SettledLayer out{
          .label = k.label, .estimate = k.estimate, .actual = actual[i], .hold = k.hold};
      const std::int64_t delta = actual[i] - k.estimate;
      with_table(k.limit.algorithm(), [&](auto& table) {
        const std::int64_t done = table.settle_key(k.key, k.limit, now, delta, k.mark, out.after);
        (delta > 0 ? out.charged : out.refunded) = done;
        return 0;
      });
      settled.push_back(std::move(out));
    }
    // Only a tombstone stays, until it would have expired: a second settlement is a conflict.
    settled_ids_.add(settled_hash(settlement.id), kept.expires_at, now);
    shard.by_expiry.erase(kept.expiry);
    shard.open.erase(found);
    open_reservations_.fetch_sub(1, std::memory_order_relaxed);
    return settled;
  }

  // Drops the reservations past their ttl, and the tombstones past theirs: pops only what has
  // expired (plus one look per shard).
  std::size_t sweep_reservations(Micros now) {
    std::size_t dropped = 0;
    for (ReservationShard& shard : reservation_shards_) {
      std::lock_guard hold(shard.mutex);
      dropped += expire_locked(shard, now);
    }
    settled_ids_.expire(now);
    return dropped;
  }

  // Operation::kCharge: each key charged its cost without a check (debt, bounded as a
  // settlement's is); a decision per key: charged, and the key as it stands after.
  Decisions charge(const StoreRequest& request, Micros now) {
    const std::span<const KeyedLimit> checks = request.checks();
    Decisions decisions;
    decisions.reserve(checks.size());
    for (std::size_t i = 0; i < checks.size(); ++i) {
      Decision after;
      with_table(checks[i].limit->algorithm(), [&](auto& table) {
        return table.settle_key(checks[i].key, *checks[i].limit, now, request.cost_of(i),
                                core::ChargeMark{}, after);
      });
      after.allowed = true;
      decisions.push_back(after);
    }
    return decisions;
  }

  // Operation::kReset: each key's state forgotten; a decision per key says whether it had one.
  Decisions reset(std::span<const KeyedLimit> checks) {
    Decisions decisions;
    decisions.reserve(checks.size());
    for (const KeyedLimit& c : checks) {
      const bool had = with_table(c.limit->algorithm(),
                                  [&](auto& table) { return table.reset(c.key, *c.limit); });
      decisions.push_back(Decision{.allowed = had, .limit = c.limit->limit()});
    }
    return decisions;
  }

  std::size_t sweep(Micros now) {
    return std::apply([now](auto&... table) { return (table.sweep(now) + ...); }, tables_);
  }

  std::size_t size() const { return budget_.used(); }

  // Reservations made and neither settled nor swept as expired (what counts against
  // max_reservations); swept unsettled.
  std::uint64_t open_reservations() const { return open_reservations_.load(); }
  std::uint64_t expired_reservations() const { return expired_reservations_.load(); }

 private:
  static std::size_t shards(const MemoryStoreOptions& options) {
    return std::bit_ceil(std::max<std::size_t>(1, options.shards));
  }

  // The hash seed: random per store, so that nobody outside can predict which keys collide.
  static std::uint64_t random_seed() {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
  }

  template <std::size_t... I>
  Tables make_tables(std::size_t shards, std::uint64_t seed, std::index_sequence<I...>) {
    return Tables{std::tuple_element_t<I, Tables>(kAlgorithms[I], shards, budget_, seed)...};
  }

  // f(table of `algorithm`), with the table's own type; every f returns one type whatever the
  // table. A chain of comparisons the compiler inlines, as it would a switch.
  template <std::size_t I = 0, typename F>
  auto with_table(Algorithm algorithm, F&& f)
      -> std::invoke_result_t<F&, std::tuple_element_t<0, Tables>&> {
    if constexpr (I + 1 == kAlgorithmCount) {
      return f(std::get<I>(tables_));
    } else {
      if (algorithm_index(algorithm) == I) return f(std::get<I>(tables_));
      return with_table<I + 1>(algorithm, f);
    }
  }

  // An open reservation (src/memory/reservation_record.h).
  using Reservation = memory::Reservation;
  struct ReservationShard {
    std::mutex mutex;
    std::unordered_map<std::string, Reservation, IdHash, std::equal_to<>> open;
    // The open ones by expiry (the ids view `open`'s keys, which never move): expiring pops
    // from the front only what is due.
    std::multimap<Micros, std::string_view> by_expiry;
  };
  static constexpr std::size_t kReservationShards = 16;

  // Tombstones of settled ids (src/memory/settled_ids.h).
  using SettledIds = memory::SettledIds;

  // A place among the open reservations, or false when max_reservations are open even after
  // dropping the expired ones. Never more than the maximum at once, whatever the threads do.
  bool take_open_place(Micros now) {
    std::size_t open = open_reservations_.load(std::memory_order_relaxed);
    bool expired_dropped = false;
    while (true) {
      if (open >= max_reservations_) {
        if (expired_dropped) return false;
        sweep_reservations(now);
        expired_dropped = true;
        open = open_reservations_.load(std::memory_order_relaxed);
        continue;
      }
      if (open_reservations_.compare_exchange_weak(open, open + 1, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  // Drops one open reservation found past its ttl (the caller holds its shard's lock): its
  // estimates stay charged.
  void drop_expired_locked(ReservationShard& shard,
                           decltype(ReservationShard::open)::iterator found) {
    shard.by_expiry.erase(found->second.expiry);
    shard.open.erase(found);
    open_reservations_.fetch_sub(1, std::memory_order_relaxed);
    expired_reservations_.fetch_add(1, std::memory_order_relaxed);
  }

  // Drops the shard's reservations past their ttl (the caller holds its lock), from the front of
  // its expiry order: O(what expired).
  std::size_t expire_locked(ReservationShard& shard, Micros now) {
    std::size_t dropped = 0;
    while (!shard.by_expiry.empty() && shard.by_expiry.begin()->first <= now) {
      drop_expired_locked(shard, shard.open.find(shard.by_expiry.begin()->second));
      ++dropped;
    }
    return dropped;
  }

  std::uint64_t settled_hash(std::string_view id) const {
    return std::hash<std::string_view>{}(id) ^ settled_seed_;
  }

  ReservationShard& reservation_shard(std::string_view id) {
    return reservation_shards_[IdHash{}(id) % kReservationShards];
  }

  // Sweeps every `interval` (reservations expired, then keys idle, at the clock's now) on the
  // runtime until the destructor cancels it.
  void start_sweeper(Runtime& runtime, std::chrono::milliseconds interval) {
    sweeper_ = runtime.every(std::chrono::microseconds(interval).count(), [this] {
      const Micros at = now();
      sweep_reservations(at);
      sweep(at);
    });
  }

  const std::shared_ptr<Runtime> runtime_;
  const std::shared_ptr<const Clock> clock_;
  const std::size_t max_reservations_;
  const std::uint64_t settled_seed_ = random_seed();
  memory::KeyBudget budget_;  // declared before the tables, which keep a reference to it
  Tables tables_;
  std::array<ReservationShard, kReservationShards> reservation_shards_;
  SettledIds settled_ids_;
  // Open reservations, and the places taken by reserves under way: never above the maximum.
  std::atomic<std::size_t> open_reservations_{0};
  std::atomic<std::uint64_t> expired_reservations_{0};
  ScheduledTask sweeper_;  // declared last: cancelled before the members above go away
};

MemoryStore::MemoryStore(MemoryStoreOptions options) : impl_(std::make_unique<Impl>(options)) {}

MemoryStore::~MemoryStore() = default;

void MemoryStore::decide(const StoreRequest& request, AllCallback done) {
  const std::span<const KeyedLimit> checks = request.checks();
  if (request.operation() == Operation::kReset) {
    return complete_inline(done, Result<Decisions>(impl_->reset(checks)));
  }
  const Micros now = request.now() ? *request.now() : impl_->now();
  if (request.operation() == Operation::kReserve) {
    return complete_inline(done, impl_->reserve(checks, now, request.cost(), *request.reserve()));
  }
  if (request.operation() == Operation::kCharge) {
    return complete_inline(done, Result<Decisions>(impl_->charge(request, now)));
  }
  if (checks.size() == 1) {  // one key: no shard set to lock in order
    Result<Decision> decision =
        impl_->check(checks[0].key, *checks[0].limit, now, request.cost_of(0));
    if (!decision)
      return complete_inline(done, Result<Decisions>(std::unexpected(decision.error())));
    return complete_inline(done, Result<Decisions>(Decisions{*decision}));
  }
  complete_inline(done, impl_->check_all(checks, now, request.cost()));
}

Result<Decision> MemoryStore::check(std::string_view key, const Limit& limit, std::int64_t cost,
                                    std::optional<Micros> now) {
  // One key: the rule checked in line; problem() (out of line) only for its error.
  if (!plainly_valid(key, cost, now)) [[unlikely]] {
    const KeyedLimit one[] = {{key, &limit}};
    if (std::optional<Error> wrong = StoreRequest::problem(one, cost, now)) {
      return std::unexpected(std::move(*wrong));
    }
  }
  return impl_->check(key, limit, now ? *now : impl_->now(), cost);
}

Result<Decisions> MemoryStore::check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                         std::optional<Micros> now) {
  if (std::optional<Error> wrong = StoreRequest::problem(checks, cost, now)) {
    return std::unexpected(std::move(*wrong));
  }
  return impl_->check_all(checks, now ? *now : impl_->now(), cost);
}

void MemoryStore::settle(const Settlement& settlement, SettleCallback done) {
  if (std::optional<Error> wrong = settlement_problem(settlement)) {
    return complete_inline(done, Result<Settled>(std::unexpected(std::move(*wrong))));
  }
  complete_inline(done, impl_->settle(settlement, settlement.now ? *settlement.now : impl_->now()));
}

std::size_t MemoryStore::sweep(Micros now) {
  impl_->sweep_reservations(now);
  return impl_->sweep(now);
}

std::size_t MemoryStore::sweep() { return sweep(impl_->now()); }

std::size_t MemoryStore::size() const { return impl_->size(); }

void MemoryStore::append_metrics(std::string& out) const {
  const std::uint64_t open = impl_->open_reservations();
  const std::uint64_t expired = impl_->expired_reservations();
  if (open == 0 && expired == 0) return;  // no reservation made yet: nothing to say
  append_metric_family(out, "spillway_reservations_open", MetricType::kGauge,
                       "Usage-based limits: reservations neither committed, cancelled nor expired "
                       "(an expired one counts until the store's sweep drops it).");
  append_metric_sample(out, "spillway_reservations_open", {}, open);
  append_metric_family(out, "spillway_reservations_expired_total", MetricType::kCounter,
                       "Usage-based limits: reservations never settled, dropped by the sweep; "
                       "their estimates stayed charged.");
  append_metric_sample(out, "spillway_reservations_expired_total", {}, expired);
}

}  // namespace spillway
