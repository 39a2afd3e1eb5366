#include "src/server/held_replies.h"

#include <utility>

namespace spillway::server {

bool HeldReplies::hold(Micros delay, Answer answer) {
  std::unique_lock lock(mutex_);
  if (released_) {
    lock.unlock();
    answer(true);
    return true;
  }
  if (held_.size() >= capacity()) return false;
  const std::uint64_t id = next_id_++;
  auto entry = std::make_shared<Entry>();
  entry->answer = std::move(answer);
  // Under the lock: due() takes it, so the task is in place before it can run.
  entry->task = runtime_.after(delay, [this, id] { due(id); });
  held_.emplace(id, std::move(entry));
  return true;
}

void HeldReplies::due(std::uint64_t id) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    auto it = held_.find(id);
    if (it == held_.end()) return;  // release_all() has it
    entry = std::move(it->second);
    held_.erase(it);
  }
  entry->answer(false);
  // The entry, and with it this task's schedule, ends here, inside the task: no wait.
}

std::size_t HeldReplies::release_all() {
  std::unordered_map<std::uint64_t, std::shared_ptr<Entry>> taken;
  {
    std::lock_guard lock(mutex_);
    released_ = true;
    taken.swap(held_);
  }
  for (auto& [id, entry] : taken) entry->answer(true);
  return taken.size();  // `taken` ends each schedule, waiting for a due() under way (finds none)
}

std::size_t HeldReplies::held() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

}  // namespace spillway::server
