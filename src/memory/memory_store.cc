#include "spillway/memory_store.h"

#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <thread>

#include "src/core/fixed_window.h"
#include "src/core/gcra.h"
#include "src/core/sliding_log.h"
#include "src/core/sliding_window.h"
#include "src/core/token_bucket.h"
#include "src/memory/sharded_table.h"

namespace spillway {
class MemoryStore::Impl {
 public:
  explicit Impl(const MemoryStoreOptions& options)
      : fixed_window_(shards(options), tracked_, options.max_keys),
        sliding_log_(shards(options), tracked_, options.max_keys),
        sliding_window_(shards(options), tracked_, options.max_keys),
        token_bucket_(shards(options), tracked_, options.max_keys),
        gcra_(shards(options), tracked_, options.max_keys) {}

  Result<Decision> check(std::string_view key, const Limit& limit, Micros now, std::int64_t cost) {
    switch (limit.algorithm()) {
      case Algorithm::kFixedWindow:
        return fixed_window_.check(key, limit, now, cost);
      case Algorithm::kSlidingLog:
        return sliding_log_.check(key, limit, now, cost);
      case Algorithm::kSlidingWindow:
        return sliding_window_.check(key, limit, now, cost);
      case Algorithm::kTokenBucket:
        return token_bucket_.check(key, limit, now, cost);
      case Algorithm::kGcra:
        return gcra_.check(key, limit, now, cost);
    }
    return std::unexpected(Error{Errc::kInternal, "unknown algorithm"});
  }

  // Calls f with the table of `algorithm`, typed.
  template <typename F>
  auto with_table(Algorithm algorithm, F&& f) {
    switch (algorithm) {
      case Algorithm::kFixedWindow:
        return f(fixed_window_);
      case Algorithm::kSlidingLog:
        return f(sliding_log_);
      case Algorithm::kSlidingWindow:
        return f(sliding_window_);
      case Algorithm::kTokenBucket:
        return f(token_bucket_);
      case Algorithm::kGcra:
        break;
    }
    return f(gcra_);
  }

  // All-or-nothing over several keys: every shard involved is locked (in address order, so two
  // requests can never wait on each other), every key is decided dry, and only if all admit are
  // they decided for real. New keys' places are reserved first: a full store changes nothing.
  Result<Decisions> check_all(std::span<const KeyedLimit> checks, Micros now, std::int64_t cost) {
    struct Item {
      memory::KeyView key;
      const Limit* limit;
    };
    // A policy checks a handful of keys: no allocation below eight.
    boost::container::small_vector<Item, 8> items;
    boost::container::small_vector<std::mutex*, 8> mutexes;
    for (const KeyedLimit& c : checks) {
      items.push_back({memory::make_key_view(c.key, *c.limit), c.limit});
      mutexes.push_back(with_table(
          c.limit->algorithm(), [&](auto& table) { return &table.mutex_for(items.back().key); }));
    }
    std::sort(mutexes.begin(), mutexes.end(), std::less<std::mutex*>());
    mutexes.erase(std::unique(mutexes.begin(), mutexes.end()), mutexes.end());
    boost::container::small_vector<std::unique_lock<std::mutex>, 8> locks;
    for (std::mutex* m : mutexes) locks.emplace_back(*m);

    Decisions decisions;
    decisions.reserve(items.size());
    std::size_t new_keys = 0;
    for (const Item& item : items) {
      with_table(item.limit->algorithm(), [&](auto& table) {
        bool tracked = false;
        decisions.push_back(table.peek_locked(item.key, *item.limit, now, cost, &tracked));
        if (decisions.back().allowed && cost > 0 && !tracked) ++new_keys;
        return 0;
      });
    }
    if (!all_allowed(decisions)) {
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!decisions[i].allowed) continue;
        decisions[i] = with_table(items[i].limit->algorithm(), [&](auto& table) {
          return table.peek_locked(items[i].key, *items[i].limit, now, 0);
        });
      }
      return decisions;
    }
    if (new_keys > 0 && !fixed_window_.reserve_keys(new_keys, nullptr, now)) {
      return std::unexpected(fixed_window_.store_full());
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      decisions[i] = with_table(items[i].limit->algorithm(), [&](auto& table) {
        return table.commit_locked(items[i].key, *items[i].limit, now, cost);
      });
    }
    return decisions;
  }

  std::size_t sweep(Micros now) {
    return fixed_window_.sweep(now) + sliding_log_.sweep(now) + sliding_window_.sweep(now) +
           token_bucket_.sweep(now) + gcra_.sweep(now);
  }

  std::size_t size() const { return tracked_.load(std::memory_order_relaxed); }

 private:
  static std::size_t shards(const MemoryStoreOptions& options) {
    return std::bit_ceil(std::max<std::size_t>(1, options.shards));
  }

  std::atomic<std::size_t> tracked_{0};
  memory::ShardedTable<core::FixedWindowState> fixed_window_;
  memory::ShardedTable<core::SlidingLogState> sliding_log_;
  memory::ShardedTable<core::SlidingWindowState> sliding_window_;
  memory::ShardedTable<core::TokenBucketState> token_bucket_;
  memory::ShardedTable<core::GcraState> gcra_;
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

Result<Decision> MemoryStore::check(std::string_view key, const Limit& limit, std::int64_t cost,
                                    std::optional<Micros> now) {
  if (Result<void> valid = validate_check(key, cost, now); !valid) {
    return std::unexpected(valid.error());
  }
  return impl_->check(key, limit, now ? *now : clock_->now(), cost);
}

Result<Decisions> MemoryStore::check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                         std::optional<Micros> now) {
  if (Result<void> valid = validate_check_all(checks, cost, now); !valid) {
    return std::unexpected(valid.error());
  }
  return impl_->check_all(checks, now ? *now : clock_->now(), cost);
}

std::size_t MemoryStore::sweep(Micros now) { return impl_->sweep(now); }

std::size_t MemoryStore::size() const { return impl_->size(); }

}  // namespace spillway
