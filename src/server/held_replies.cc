#include "src/server/held_replies.h"

#include <utility>

namespace spillway::server {

HeldReplies::Held HeldReplies::hold(Micros delay, Answer answer) {
  std::lock_guard lock(mutex_);
  if (released_) return Held::kReleased;
  if (held_.size() >= capacity()) return Held::kFull;
  const std::uint64_t id = next_id_++;
  auto entry = std::make_shared<Entry>();
  entry->answer = std::move(answer);
  // Under the lock: due() takes it, so the task is in place before it can run.
  entry->task = runtime_.after(delay, [this, id] { due(id); });
  held_.emplace(id, std::move(entry));
  return Held::kHeld;
}

void HeldReplies::due(std::uint64_t id) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    auto it = held_.find(id);
    if (it == held_.end()) return;  // release_all() has it
    entry = std::move(it->second);
    held_.erase(it);
    ++running_;
  }
  entry->answer(false);
  entry->answer = nullptr;  // what it holds goes before release_all() can return
  {
    // Notified under the lock: once release_all() sees 0, nothing here touches `this` again.
    std::lock_guard lock(mutex_);
    --running_;
    finished_.notify_all();
  }
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
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [this] { return running_ == 0; });
  return taken.size();  // `taken` ends each schedule, waiting for a due() under way (finds none)
}

std::size_t HeldReplies::held() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

}  // namespace spillway::server
