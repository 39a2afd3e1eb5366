// The most denied keys, in bounded memory: the space-saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005) over `capacity` counters. A key that is not tracked takes the place of the
// least counted one and inherits its count as its possible over-count (`error`), so for every
// reported key: count − error ≤ its true number of denials ≤ count, and every key denied more
// than total / capacity times is reported.
//
// Thread safety: add() and top() from any thread (one mutex; add() hashes the key once and scans
// `capacity` hashes, finding the key and the least counted one in the same pass; a key replaced
// reuses its slot's string buffers, so a denial allocates only when a key is longer than any its
// slot held before). Memory: `capacity` keys, hashes and counters.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace spillway::server {

class TopKeys {
 public:
  explicit TopKeys(std::size_t capacity = 64) : capacity_(capacity) {}

  struct Entry {
    std::string key;
    std::uint64_t count = 0;  // an upper bound of the key's denials
    std::uint64_t error = 0;  // how much of `count` may belong to keys it replaced
    std::string plan;         // the plan in force at the key's last denial ("" for none)
  };

  // Counts a denial of `key`; `plan`: the plan its layer applied (a by_plan layer), else "".
  void add(std::string_view key, std::string_view plan = {});
  // The `n` highest counts, highest first (ties by key).
  std::vector<Entry> top(std::size_t n) const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<std::size_t> hashes_;  // hashes_[i]: the hash of entries_[i].key
};

}  // namespace spillway::server
