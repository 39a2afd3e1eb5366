#include "src/redis/batcher.h"

#include <algorithm>

#include "src/redis/script_reply.h"
#include "src/redis/scripts.h"

namespace spillway::redis {
namespace {

Error closed_error() { return Error{Errc::kUnavailable, "the redis store is closing"}; }

}  // namespace

void Batcher::close() {
  std::deque<Pending> orphans;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    orphans.swap(queue_);
  }
  for (Pending& p : orphans) p.done(std::unexpected(closed_error()));
}

void Batcher::submit(Pending check) {
  std::vector<Pending> batch;
  {
    std::lock_guard lock(mutex_);
    if (closing_) {
      check.done(std::unexpected(closed_error()));
      return;
    }
    queue_.push_back(std::move(check));
    if (in_flight_ >= options_.max_in_flight) return;  // a returning call will take it
    batch = take_batch_locked();
  }
  send(std::make_shared<std::vector<Pending>>(std::move(batch)));
}

// The oldest queued check and the later ones of its slot that share its `now`, in order, capped.
// A check of that slot with another `now` ends the batch, so no key's checks are reordered.
std::vector<Batcher::Pending> Batcher::take_batch_locked() {
  std::vector<Pending> batch;
  const auto cap = static_cast<std::size_t>(std::max(1, options_.max_batch));
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < cap;) {
    if (it->slot != batch.front().slot) {
      ++it;
      continue;
    }
    if (it->now != batch.front().now) break;
    batch.push_back(std::move(*it));
    it = queue_.erase(it);
  }
  ++in_flight_;
  return batch;
}

// One script call for the whole batch.
void Batcher::send(std::shared_ptr<std::vector<Pending>> batch) {
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(5 + batch->size() * 7);
  args->insert(args->end(), {"", "", std::to_string(batch->size())});
  for (const Pending& p : *batch) args->push_back(p.key);
  args->push_back(batch->front().now);
  args->push_back(std::to_string(options_.ttl_floor.count()));
  for (const Pending& p : *batch) {
    for (std::int64_t n : p.numbers) args->push_back(std::to_string(n));
  }
  target_.run(batch->front().slot, {script_source(algorithm_), &script_sha(algorithm_)},
              std::move(args),
              [this, batch](Result<Reply> reply) { finish(*batch, std::move(reply)); });
}

void Batcher::finish(std::vector<Pending>& batch, Result<Reply> reply) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    batch[i].done(reply ? decision_at(*reply, i) : std::unexpected(reply.error()));
  }
  std::vector<Pending> next;
  {
    std::lock_guard lock(mutex_);
    --in_flight_;
    if (queue_.empty() || closing_) return;
    next = take_batch_locked();
  }
  send(std::make_shared<std::vector<Pending>>(std::move(next)));
}

}  // namespace spillway::redis
