// The memory store's tombstones of settled reservations (MemoryStore, spillway/memory_store.h):
// the ids settled and not yet past their ttl, so that a second settlement of one id is told
// apart from an unknown id (kConflict, not kNotFound). Each is a 64-bit hash of the id (the
// caller's, seeded) with its expiry (Micros), kept in settlement order; at most `bound`, the
// oldest settled forgotten first.
// Thread safety: every method from any thread (its own lock; the store takes it after a
// reservation shard's, never before).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "spillway/duration.h"

namespace spillway::memory {

class SettledIds {
 public:
  explicit SettledIds(std::size_t bound) : bound_(std::max<std::size_t>(1, bound)) {}

  void add(std::uint64_t hash, Micros expires_at, Micros now) {
    std::lock_guard hold(mutex_);
    expire_locked(now);
    // Two ids with one hash (2^-64 for random ids): the first's tombstone stands for both.
    if (expiry_.contains(hash)) return;
    while (order_.size() >= bound_) pop_oldest_locked();
    expiry_.emplace(hash, expires_at);
    order_.emplace_back(hash, expires_at);
  }
  bool holds(std::uint64_t hash, Micros now) {
    std::lock_guard hold(mutex_);
    const auto found = expiry_.find(hash);
    return found != expiry_.end() && found->second > now;
  }
  void expire(Micros now) {
    std::lock_guard hold(mutex_);
    expire_locked(now);
  }

 private:
  // Settlement order is nearly expiry order (one ttl); a front not yet due holds back the
  // ones behind it only until it is due or the bound pushes it out.
  void expire_locked(Micros now) {
    while (!order_.empty() && order_.front().second <= now) pop_oldest_locked();
  }
  void pop_oldest_locked() {
    expiry_.erase(order_.front().first);
    order_.pop_front();
  }
  const std::size_t bound_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Micros> expiry_;
  std::deque<std::pair<std::uint64_t, Micros>> order_;  // one entry per key of expiry_
};

}  // namespace spillway::memory
