// The memory store's bound on tracked keys (MemoryStoreOptions::max_keys), shared by the tables
// of every algorithm: a new key takes a place before it is stored, and a swept key gives its
// place back.
//
// Thread safety: lock-free (one atomic counter); safe from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "spillway/error.h"

namespace spillway::memory {

class KeyBudget {
 public:
  explicit KeyBudget(std::size_t max_keys) : max_keys_(max_keys) {}
  KeyBudget(const KeyBudget&) = delete;
  KeyBudget& operator=(const KeyBudget&) = delete;

  // Takes `count` places, all or none; false when fewer are free.
  bool take(std::size_t count) {
    if (used_.fetch_add(count, std::memory_order_relaxed) + count <= max_keys_) return true;
    used_.fetch_sub(count, std::memory_order_relaxed);
    return false;
  }

  void give_back(std::size_t count) { used_.fetch_sub(count, std::memory_order_relaxed); }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

  // The error a check gets when no place is free for its new key.
  Error full_error() const {
    return Error{Errc::kStoreFull, "memory store is full (" + std::to_string(max_keys_) +
                                       " keys tracked); new key not admitted"};
  }

 private:
  const std::size_t max_keys_;
  std::atomic<std::size_t> used_{0};
};

}  // namespace spillway::memory
