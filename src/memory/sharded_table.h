// One algorithm's keys in the memory store: a fixed array of shards, each a mutex around an open
// addressing hash map from storage key to that algorithm's state.
//
// Thread safety: every method locks only the shard it touches (sweep locks them one at a time).
// The bound on keys shared by all tables is a KeyBudget owned by the MemoryStore.
#pragma once

#include <atomic>
#include <bit>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "src/memory/key_budget.h"

namespace spillway::memory {

// A key as the table stores it: the Limit's numbers and the user's bytes kept apart (no user
// bytes can imitate another Limit), with the hash computed once per check and kept.
struct LimitNumbers {
  std::int64_t limit;
  std::int64_t period;
  std::int64_t burst;
  friend bool operator==(const LimitNumbers&, const LimitNumbers&) = default;
};

struct KeyView {
  std::size_t hash;
  LimitNumbers numbers;
  std::string_view bytes;
};

struct StoredKey {
  std::size_t hash;
  LimitNumbers numbers;
  std::string bytes;
};

inline KeyView make_key_view(std::string_view bytes, const Limit& limit) {
  const LimitNumbers numbers{limit.limit(), limit.period(), limit.burst()};
  std::size_t hash = std::hash<std::string_view>{}(bytes);
  // Fold the numbers in; equality still compares them exactly, so this only spreads keys.
  for (std::int64_t n : {numbers.limit, numbers.period, numbers.burst}) {
    hash = (hash ^ static_cast<std::size_t>(n)) * 0x9E3779B97F4A7C15ull;
    hash ^= hash >> 29;
  }
  return {hash, numbers, bytes};
}

struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(const KeyView& key) const noexcept { return key.hash; }
  std::size_t operator()(const StoredKey& key) const noexcept { return key.hash; }
};

struct KeyEqual {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const noexcept {
    return a.hash == b.hash && a.numbers == b.numbers && std::string_view(a.bytes) == b.bytes;
  }
};

template <typename State>
class ShardedTable {
  struct Shard;

 public:
  // shards must be a power of two. `budget` bounds the keys of all tables together.
  ShardedTable(std::size_t shards, KeyBudget& budget)
      : shards_(shards), shift_(64 - std::countr_zero(shards)), budget_(budget) {}

  // The key's state under `limit`. The math runs under the shard's lock.
  Result<Decision> check(std::string_view user_key, const Limit& limit, Micros now,
                         std::int64_t cost) {
    const KeyView key = make_key_view(user_key, limit);
    Shard& shard = shard_for(key);
    std::lock_guard lock(shard.mutex);
    if (cost > 0 && !contains_locked(key)) {
      // A new key is remembered only if admitted; reserve its place first, so that a full store
      // refuses it without having changed anything.
      Decision fresh = peek_locked(key, limit, now, cost);
      if (!fresh.allowed) return fresh;
      if (!reserve_key(shard, now)) return std::unexpected(budget_.full_error());
    }
    return commit_locked(key, limit, now, cost);
  }

  // ---- For MemoryStore::check_all, which locks several shards (in address order) first. ----

  std::mutex& mutex_for(const KeyView& key) { return shard_for(key).mutex; }

  // Under the key's shard lock: the decision `cost` would get, changing nothing. `tracked`, if
  // given, is set to whether the key is in the table.
  Decision peek_locked(const KeyView& key, const Limit& limit, Micros now, std::int64_t cost,
                       bool* tracked = nullptr) {
    Shard& shard = shard_for(key);
    auto it = shard.map.find(key);
    if (tracked != nullptr) *tracked = it != shard.map.end();
    State copy = it == shard.map.end() ? State{} : it->second.state;
    return decide(copy, limit, now, cost);
  }

  bool contains_locked(const KeyView& key) { return shard_for(key).map.contains(key); }

  // Under the key's shard lock: decides and records. A key that is new and admitted with
  // cost > 0 takes a place the caller has already taken from the KeyBudget.
  Decision commit_locked(const KeyView& key, const Limit& limit, Micros now, std::int64_t cost) {
    Shard& shard = shard_for(key);
    if (auto it = shard.map.find(key); it != shard.map.end()) {
      Slot& slot = it->second;
      Decision decision = decide(slot.state, limit, now, cost);
      slot.idle_at = now + decision.reset_after;
      return decision;
    }
    Slot fresh{};
    Decision decision = decide(fresh.state, limit, now, cost);
    if (!decision.allowed || cost == 0) return decision;  // nothing to remember
    fresh.idle_at = now + decision.reset_after;
    shard.map.emplace(StoredKey{key.hash, key.numbers, std::string(key.bytes)}, std::move(fresh));
    if (shard.map.size() >= shard.sweep_at) sweep_locked(shard, now);
    return decision;
  }

  std::size_t sweep(Micros now) {
    std::size_t dropped = 0;
    for (Shard& shard : shards_) {
      std::lock_guard lock(shard.mutex);
      dropped += sweep_locked(shard, now);
    }
    return dropped;
  }

 private:
  static constexpr std::size_t kMinSweepSize = 1024;

  struct Slot {
    State state;
    Micros idle_at = 0;  // now + reset_after of the last decision: from then on, same as absent
  };

  struct alignas(64) Shard {
    std::mutex mutex;
    boost::unordered_flat_map<StoredKey, Slot, KeyHash, KeyEqual> map;
    std::size_t sweep_at = kMinSweepSize;  // sweep when the map grows to this size
  };

  Shard& shard_for(const KeyView& key) {
    // Shard by the top bits; the map spreads keys by its own mix of the whole hash.
    return shards_[shards_.size() == 1 ? 0 : key.hash >> shift_];
  }

  // Takes a place for one new key in `locked` (a shard whose lock the caller holds); when none is
  // free, sweeps that shard first and tries again.
  bool reserve_key(Shard& locked, Micros now) {
    if (budget_.take(1)) return true;
    sweep_locked(locked, now);
    return budget_.take(1);
  }

  // Drops idle keys; amortised O(1) per insert because sweep_at doubles with the live size.
  std::size_t sweep_locked(Shard& shard, Micros now) {
    const std::size_t dropped = boost::unordered::erase_if(
        shard.map, [now](const auto& entry) { return entry.second.idle_at <= now; });
    budget_.give_back(dropped);
    if (shard.map.empty()) {
      shard.map = {};  // give the buckets back
    } else if (dropped > 0) {
      shard.map.rehash(0);  // shrink to fit what is left
    }
    shard.sweep_at = std::max(kMinSweepSize, 2 * shard.map.size());
    return dropped;
  }

  std::vector<Shard> shards_;
  int shift_;
  KeyBudget& budget_;
};

}  // namespace spillway::memory
