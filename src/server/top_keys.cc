#include "src/server/top_keys.h"

#include <algorithm>

namespace spillway::server {

void TopKeys::add(std::string_view key, std::string_view plan) {
  if (capacity_ == 0) return;
  const std::size_t hash = std::hash<std::string_view>{}(key);
  std::lock_guard lock(mutex_);
  std::size_t least = 0;
  for (std::size_t i = 0; i < hashes_.size(); ++i) {
    if (hashes_[i] == hash && entries_[i].key == key) {
      Entry& entry = entries_[i];
      ++entry.count;
      if (entry.plan != plan) entry.plan.assign(plan);  // a plan changed at runtime shows
      return;
    }
    if (entries_[i].count < entries_[least].count) least = i;
  }
  if (entries_.size() < capacity_) {
    entries_.push_back({std::string(key), 1, 0, std::string(plan)});
    hashes_.push_back(hash);
    return;
  }
  // Replace the least counted key; the newcomer may have been denied as often as it was.
  Entry& slot = entries_[least];
  slot.key.assign(key);
  slot.plan.assign(plan);
  slot.error = slot.count;
  ++slot.count;
  hashes_[least] = hash;
}

std::vector<TopKeys::Entry> TopKeys::top(std::size_t n) const {
  std::vector<Entry> sorted;
  {
    std::lock_guard lock(mutex_);
    sorted = entries_;
  }
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  });
  if (sorted.size() > n) sorted.resize(n);
  return sorted;
}

}  // namespace spillway::server
