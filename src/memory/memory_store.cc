#include "spillway/memory_store.h"

#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <random>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "src/core/all_algorithms.h"
#include "src/core/inline_completion.h"
#include "src/memory/key_budget.h"
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

}  // namespace

class MemoryStore::Impl {
 public:
  explicit Impl(const MemoryStoreOptions& options)
      : budget_(options.max_keys),
        tables_(make_tables(shards(options), random_seed(),
                            std::make_index_sequence<kAlgorithmCount>{})) {}

  Result<Decision> check(std::string_view key, const Limit& limit, Micros now, std::int64_t cost) {
    return with_table(limit.algorithm(), [&](auto& table) -> Result<Decision> {
      return table.check(key, limit, now, cost);
    });
  }

  // All-or-nothing over several keys: every shard involved is locked (in address order, so two
  // requests can never wait on each other), every key is decided dry, and only if all admit are
  // they decided for real. New keys' places are taken from the budget first: a full store changes
  // nothing (after sweeping these shards once to make room, as a single check does).
  Result<Decisions> check_all(std::span<const KeyedLimit> checks, Micros now, std::int64_t cost) {
    struct Item {
      memory::TableKey key;
      const Limit* limit;
    };
    // A policy checks a handful of keys: no allocation below eight.
    boost::container::small_vector<Item, 8> items;
    boost::container::small_vector<memory::SpinLock*, 8> shard_locks;
    for (const KeyedLimit& c : checks) {
      with_table(c.limit->algorithm(), [&](auto& table) {
        items.push_back({table.key_of(c.key, *c.limit), c.limit});
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
          decisions.push_back(table.peek_locked(item.key, *item.limit, now, cost, &tracked));
          if (decisions.back().allowed && cost > 0 && !tracked) ++new_keys;
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
        return table.commit_locked(items[i].key, *items[i].limit, now, cost);
      });
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

  memory::KeyBudget budget_;  // declared before the tables, which keep a reference to it
  Tables tables_;
};

MemoryStore::MemoryStore(MemoryStoreOptions options)
    : clock_(options.clock ? options.clock : std::make_shared<SystemClock>()),
      impl_(std::make_unique<Impl>(options)) {
  if (options.sweep_interval.count() > 0) {
    sweeper_ = std::jthread([this, interval = options.sweep_interval](std::stop_token stop) {
      std::mutex mutex;
      std::condition_variable_any wake;
      std::unique_lock lock(mutex);
      // wait_for returns early when a stop is requested; the destructor requests it.
      while (!stop.stop_requested()) {
        wake.wait_for(lock, stop, interval, [] { return false; });
        if (!stop.stop_requested()) sweep();
      }
    });
  }
}

MemoryStore::~MemoryStore() = default;

void MemoryStore::decide(const StoreRequest& request, AllCallback done) {
  const std::span<const KeyedLimit> checks = request.checks();
  if (request.operation() == Operation::kReset) {
    return complete_inline(done, Result<Decisions>(impl_->reset(checks)));
  }
  const Micros now = request.now() ? *request.now() : clock_->now();
  if (checks.size() == 1) {  // one key: no shard set to lock in order
    Result<Decision> decision = impl_->check(checks[0].key, *checks[0].limit, now, request.cost());
    if (!decision)
      return complete_inline(done, Result<Decisions>(std::unexpected(decision.error())));
    return complete_inline(done, Result<Decisions>(Decisions{*decision}));
  }
  complete_inline(done, impl_->check_all(checks, now, request.cost()));
}

Result<Decision> MemoryStore::check(std::string_view key, const Limit& limit, std::int64_t cost,
                                    std::optional<Micros> now) {
  const KeyedLimit one[] = {{key, &limit}};
  if (std::optional<Error> wrong = StoreRequest::problem(one, cost, now)) {
    return std::unexpected(std::move(*wrong));
  }
  return impl_->check(key, limit, now ? *now : clock_->now(), cost);
}

Result<Decisions> MemoryStore::check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                         std::optional<Micros> now) {
  if (std::optional<Error> wrong = StoreRequest::problem(checks, cost, now)) {
    return std::unexpected(std::move(*wrong));
  }
  return impl_->check_all(checks, now ? *now : clock_->now(), cost);
}

std::size_t MemoryStore::sweep(Micros now) { return impl_->sweep(now); }

std::size_t MemoryStore::size() const { return impl_->size(); }

}  // namespace spillway
