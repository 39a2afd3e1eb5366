// One algorithm's keys in the memory store: a fixed array of shards, each a lock around a flat
// hash table (src/memory/flat_table.h) from stored key (src/memory/table_key.h) to that
// algorithm's state.
//
// Thread safety: every method locks only the shard it touches (sweep locks them one at a time).
// The bound on keys shared by all tables is a KeyBudget owned by the MemoryStore.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "src/memory/flat_table.h"
#include "src/memory/key_budget.h"
#include "src/memory/spin_lock.h"
#include "src/memory/table_key.h"

namespace spillway::memory {

template <typename State>
class ShardedTable {
  struct Shard;
  using Slot = typename FlatTable<State>::Slot;

 public:
  // shards must be a power of two. `budget` bounds the keys of all tables together; `seed` is
  // the store's hash seed.
  ShardedTable(std::size_t shards, KeyBudget& budget, std::uint64_t seed)
      : seed_(seed), shard_mask_(shards - 1), budget_(budget) {
    shards_.reserve(shards);
    for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(seed));
  }

  TableKey key_of(std::string_view user_key, const Limit& limit) const {
    return make_table_key(user_key, limit, seed_);
  }

  // The key's state under `limit`. The math runs under the shard's lock.
  Result<Decision> check(std::string_view user_key, const Limit& limit, Micros now,
                         std::int64_t cost) {
    const TableKey key = key_of(user_key, limit);
    Shard& shard = shard_for(key);
    std::lock_guard hold(shard.lock);
    if (Slot* slot = shard.table.find(key)) return decide_slot(*slot, limit, now, cost);
    // A new key is remembered only if admitted; its place is reserved before it is stored, so
    // that a full store refuses it without having changed anything.
    State fresh{};
    const Decision decision = decide(fresh, limit, now, cost);
    if (!decision.allowed || cost == 0) return decision;
    if (!reserve_key(shard, now)) return std::unexpected(budget_.full_error());
    insert_locked(shard, key, std::move(fresh), now + decision.reset_after, now);
    return decision;
  }

  // ---- For MemoryStore::check_all, which locks several shards (in address order) first. ----

  SpinLock& lock_for(const TableKey& key) { return shard_for(key).lock; }

  // Under the key's shard lock: the decision `cost` would get, changing nothing. `tracked`, if
  // given, is set to whether the key is in the table.
  Decision peek_locked(const TableKey& key, const Limit& limit, Micros now, std::int64_t cost,
                       bool* tracked = nullptr) {
    const Slot* slot = shard_for(key).table.find(key);
    if (tracked != nullptr) *tracked = slot != nullptr;
    State copy = slot == nullptr ? State{} : slot->state;
    return decide(copy, limit, now, cost);
  }

  // Under the key's shard lock: decides and records. A key that is new and admitted with
  // cost > 0 takes a place the caller has already taken from the KeyBudget.
  Decision commit_locked(const TableKey& key, const Limit& limit, Micros now, std::int64_t cost) {
    Shard& shard = shard_for(key);
    if (Slot* slot = shard.table.find(key)) return decide_slot(*slot, limit, now, cost);
    State fresh{};
    const Decision decision = decide(fresh, limit, now, cost);
    if (!decision.allowed || cost == 0) return decision;  // nothing to remember
    insert_locked(shard, key, std::move(fresh), now + decision.reset_after, now);
    return decision;
  }

  std::size_t sweep(Micros now) {
    std::size_t dropped = 0;
    for (auto& shard : shards_) {
      std::lock_guard hold(shard->lock);
      dropped += sweep_locked(*shard, now);
    }
    return dropped;
  }

 private:
  static constexpr std::size_t kMinSweepSize = 1024;

  // Each shard on its own cache lines: two threads on two shards never share a line.
  struct alignas(64) Shard {
    explicit Shard(std::uint64_t seed) : table(seed) {}
    SpinLock lock;
    FlatTable<State> table;
    std::size_t sweep_at = kMinSweepSize;  // sweep when the table grows to this size
  };

  Shard& shard_for(const TableKey& key) {
    // The low bits pick the shard; the table takes its home from the high bits and its tag from
    // bits 8..14, so the three do not overlap.
    return *shards_[key.hash & shard_mask_];
  }

  static Decision decide_slot(Slot& slot, const Limit& limit, Micros now, std::int64_t cost) {
    const Decision decision = decide(slot.state, limit, now, cost);
    slot.idle = idle_units(now + decision.reset_after);
    return decision;
  }

  void insert_locked(Shard& shard, const TableKey& key, State state, Micros idle_at, Micros now) {
    shard.table.insert(key, std::move(state), idle_units(idle_at));
    if (shard.table.size() >= shard.sweep_at) sweep_locked(shard, now);
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
    const std::size_t dropped =
        shard.table.retain([now](const Slot& slot) { return !idle_by(slot.idle, now); });
    budget_.give_back(dropped);
    shard.sweep_at = std::max(kMinSweepSize, 2 * shard.table.size());
    return dropped;
  }

  const std::uint64_t seed_;
  const std::uint64_t shard_mask_;
  std::vector<std::unique_ptr<Shard>> shards_;
  KeyBudget& budget_;
};

}  // namespace spillway::memory
