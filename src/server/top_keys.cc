#include "src/server/top_keys.h"

#include <algorithm>

namespace spillway::server {

void TopKeys::add(std::string_view key) {
  if (capacity_ == 0) return;
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {
    ++entries_[it->second].count;
    return;
  }
  if (entries_.size() < capacity_) {
    index_.emplace(std::string(key), entries_.size());
    entries_.push_back({std::string(key), 1, 0});
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
