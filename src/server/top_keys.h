// The most denied keys, in bounded memory: the space-saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005) over `capacity` counters. A key that is not tracked takes the place of the
// least counted one and inherits its count as its possible over-count (`error`), so for every
// reported key: count − error ≤ its true number of denials ≤ count, and every key denied more
// than total / capacity times is reported.
//
// Thread safety: add() and top() from any thread (one mutex; add() costs a hash lookup, and a
// scan of the counters and two copies of the key when a key is not tracked yet). Memory: `capacity`
// keys and counters.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  // Key -> position in entries_, looked up by string_view: a denial of a tracked key allocates
  // nothing.
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> index_;
};

}  // namespace spillway::server
