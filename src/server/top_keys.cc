#include "src/server/top_keys.h"

#include <algorithm>

namespace spillway::server {

void TopKeys::add(std::string_view key, std::string_view plan) {
  if (capacity_ == 0) return;
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {
    Entry& entry = entries_[it->second];
    ++entry.count;
    if (entry.plan != plan) entry.plan.assign(plan);  // a plan changed at runtime shows
    return;
  }
  if (entries_.size() < capacity_) {
    index_.emplace(std::string(key), entries_.size());
    entries_.push_back({std::string(key), 1, 0, std::string(plan)});
    return;
  }
  // Replace the least counted key; the newcomer may have been denied as often as it was.
  std::size_t least = 0;
  for (std::size_t i = 1; i < entries_.size(); ++i) {
    if (entries_[i].count < entries_[least].count) least = i;
  }
  Entry& slot = entries_[least];
  index_.erase(slot.key);
  slot.key.assign(key);
  slot.plan.assign(plan);
  slot.error = slot.count;
  ++slot.count;
  index_.emplace(slot.key, least);
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
