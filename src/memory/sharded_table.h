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
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/limit.h"
#include "src/core/charge_mark.h"
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
  // The table of `algorithm` (whose state is State). shards must be a power of two. `budget`
  // bounds the keys of all tables together; `seed` is the store's hash seed.
  ShardedTable(Algorithm algorithm, std::size_t shards, KeyBudget& budget, std::uint64_t seed)
      : algorithm_(algorithm), seed_(seed), shard_mask_(shards - 1), budget_(budget) {
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
    if (Slot* slot = shard.table.find(key)) return decide(slot->state, limit, now, cost);
    // A new key is remembered only if admitted; its place is reserved before it is stored, so
    // that a full store refuses it without having changed anything.
    State fresh{};
    const Decision decision = decide(fresh, limit, now, cost);
    if (!decision.allowed || cost == 0) return decision;
    if (!reserve_key(shard, now)) return std::unexpected(budget_.full_error());
    shard.table.insert(key, std::move(fresh));
    if (shard.table.size() >= shard.sweep_at) sweep_locked(shard, now);
    return decision;
  }

  // Forgets the key's state (Operation::kReset): its slot goes back to a fresh state, which
  // decides as an absent key does and is dropped by the next sweep. Whether there was one.
  bool reset(std::string_view user_key, const Limit& limit) {
    const TableKey key = key_of(user_key, limit);
    Shard& shard = shard_for(key);
    std::lock_guard hold(shard.lock);
    Slot* slot = shard.table.find(key);
    if (slot == nullptr) return false;
    slot->state = State{};
    return true;
  }

  // Settles a charge of the key (usage-based limits: the algorithm's settle(), with the mark the
  // charge left): `delta` > 0 charges without a check, < 0 gives back. A key gone idle since has
  // nothing to give back; one not tracked takes a place for a debt (none left: the debt is
  // dropped). Returns the units settled; `after` is the key's state as a peek.
  std::int64_t settle_key(std::string_view user_key, const Limit& limit, Micros now,
                          std::int64_t delta, const core::ChargeMark& charged, Decision& after) {
    const TableKey key = key_of(user_key, limit);
    Shard& shard = shard_for(key);
    std::lock_guard hold(shard.lock);
    if (Slot* slot = shard.table.find(key)) {
      const std::int64_t done = settle(slot->state, limit, now, delta, charged);
      State peek = slot->state;
      after = decide(peek, limit, now, 0);
      return done;
    }
    State fresh{};  // idle: nothing to give back; a debt takes a place, if one is left
    std::int64_t done = delta > 0 ? settle(fresh, limit, now, delta, charged) : 0;
    if (done > 0 && reserve_key(shard, now)) {
      shard.table.insert(key, State(fresh));
    } else {
      done = 0;
      fresh = State{};
    }
    after = decide(fresh, limit, now, 0);
    return done;
  }

  // ---- For MemoryStore::check_all, which locks several shards (in address order) first. ----

  // Under the key's shard lock: the mark of the charge just committed (usage-based limits).
  core::ChargeMark mark_locked(const TableKey& key, const Limit& limit) {
    const Slot* slot = shard_for(key).table.find(key);
    return slot == nullptr ? core::ChargeMark{} : mark(slot->state, limit);
  }

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
  // cost > 0 takes a place the caller has already taken from the KeyBudget. It never sweeps: the
  // caller's other keys, counted as tracked or new before, must stay as they were counted.
  Decision commit_locked(const TableKey& key, const Limit& limit, Micros now, std::int64_t cost) {
    Shard& shard = shard_for(key);
    if (Slot* slot = shard.table.find(key)) return decide(slot->state, limit, now, cost);
    State fresh{};
    const Decision decision = decide(fresh, limit, now, cost);
    if (!decision.allowed || cost == 0) return decision;  // nothing to remember
    shard.table.insert(key, std::move(fresh));
    return decision;
  }

  // Under the key's shard lock: sweeps that shard if it has grown to its next sweep (or, with
  // `force`, anyway). check_all calls it before deciding, so that what it counts as tracked or new
  // stays so until it commits.
  void sweep_locked(const TableKey& key, Micros now, bool force) {
    Shard& shard = shard_for(key);
    if (force || shard.table.size() >= shard.sweep_at) sweep_locked(shard, now);
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
    // bits 32..38.
    return *shards_[key.hash & shard_mask_];
  }

  // Takes a place for one new key in `locked` (a shard whose lock the caller holds); when none is
  // free, sweeps that shard first and tries again.
  bool reserve_key(Shard& locked, Micros now) {
    if (budget_.take(1)) return true;
    sweep_locked(locked, now);
    return budget_.take(1);
  }

  // Drops the keys whose state is idle at `now` (core::idle_at under the limit the key's prefix
  // names: exact, so a sweep never forgets a key early nor keeps one late); amortised O(1) per
  // insert because sweep_at doubles with the live size.
  std::size_t sweep_locked(Shard& shard, Micros now) {
    LimitOfKey limits(algorithm_);
    const std::size_t dropped = shard.table.retain([&](const Slot& slot) {
      const Limit* limit = limits.of(FlatTable<State>::stored_key(slot));
      return limit == nullptr || now < idle_at(slot.state, *limit);
    });
    budget_.give_back(dropped);
    shard.sweep_at = std::max(kMinSweepSize, 2 * shard.table.size());
    return dropped;
  }

  // The Limit a stored key's prefix names, remembered from one key to the next (a table holds
  // keys of a handful of limits).
  class LimitOfKey {
   public:
    explicit LimitOfKey(Algorithm algorithm) : algorithm_(algorithm) {}
    const Limit* of(std::string_view stored) {
      std::uint64_t numbers[3];
      read_limit_numbers(stored.data(), stored.size(), numbers);
      if (!limit_ || std::memcmp(numbers, numbers_, sizeof numbers) != 0) {
        std::memcpy(numbers_, numbers, sizeof numbers);
        const auto burst = static_cast<std::int64_t>(numbers[2]);
        Result<Limit> made = Limit::make(
            algorithm_, static_cast<std::int64_t>(numbers[0]), static_cast<Micros>(numbers[1]),
            takes_burst(algorithm_) ? std::optional(burst) : std::nullopt);
        limit_ =
            made ? std::optional<Limit>(*made) : std::nullopt;  // never fails: it was made once
      }
      return limit_ ? &*limit_ : nullptr;
    }

   private:
    const Algorithm algorithm_;
    std::uint64_t numbers_[3] = {};
    std::optional<Limit> limit_;
  };

  const Algorithm algorithm_;
  const std::uint64_t seed_;
  const std::uint64_t shard_mask_;
  std::vector<std::unique_ptr<Shard>> shards_;
  KeyBudget& budget_;
};

}  // namespace spillway::memory
