#include "src/redis/batcher.h"

#include <algorithm>

#include "src/core/inline_completion.h"
#include "src/redis/script_reply.h"
#include "src/redis/scripts.h"

namespace spillway::redis {
namespace {

Error closed_error() { return Error{Errc::kUnavailable, "the redis store is closing"}; }

Error queued_too_long(std::chrono::milliseconds timeout) {
  return Error{Errc::kTimeout, "redis: no answer within " + std::to_string(timeout.count()) +
                                   " ms (the check waited in the queue behind calls in flight)"};
}

}  // namespace

void Batcher::close() {
  std::vector<Pending> orphans;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    for (auto& [slot, queue] : slots_) {
      for (Pending& p : queue.queue) orphans.push_back(std::move(p));
      queue.queue.clear();
    }
  }
  for (Pending& p : orphans) p.done(std::unexpected(closed_error()));
}

void Batcher::submit(Pending check) {
  std::vector<Pending> batch;
  std::vector<Pending> expired;
  const std::uint16_t key = check.slot;
  {
    std::unique_lock lock(mutex_);
    if (closing_) {
      // Answered outside the lock: a caller that chains its next check from the answer comes
      // back into submit().
      lock.unlock();
      complete_inline(check.done, Result<Decisions>(std::unexpected(closed_error())));
      return;
    }
    SlotQueue& slot = slots_[check.slot];
    slot.queue.push_back(std::move(check));
    // Past max_in_flight calls, checks wait for a returning call to take them, unless a whole
    // batch is waiting: a full batch gains nothing by waiting, so it goes at once.
    if (slot.in_flight >= options_.max_in_flight && !front_batch_full(slot)) return;
    batch = take_batch_locked(slot, expired);
  }
  dispatch(key, std::move(batch), std::move(expired));
}

// The caller holds one of the slot's in-flight places for `batch`.
void Batcher::dispatch(std::uint16_t key, std::vector<Pending> batch,
                       std::vector<Pending> expired) {
  for (;;) {
    for (Pending& p : expired) p.done(std::unexpected(queued_too_long(options_.timeout)));
    expired.clear();
    if (!batch.empty()) return send(std::make_shared<std::vector<Pending>>(std::move(batch)));
    // Everything taken had expired: give the place back, or use it for what queued meanwhile.
    std::lock_guard lock(mutex_);
    SlotQueue& slot = slots_[key];
    --slot.in_flight;
    if (slot.queue.empty() || closing_) {
      if (slot.in_flight == 0 && slot.queue.empty()) slots_.erase(key);
      return;
    }
    batch = take_batch_locked(slot, expired);
  }
}

// Whether the next batch would be a full one (max_batch > 1 checks sharing one `now`). With
// batching off (max_batch 1) nothing is "full": max_in_flight then bounds the calls out.
bool Batcher::front_batch_full(const SlotQueue& slot) const {
  const auto full = static_cast<std::size_t>(options_.max_batch);
  if (full <= 1 || slot.queue.size() < full) return false;
  std::size_t run = 0;
  for (const Pending& p : slot.queue) {
    if (p.now != slot.queue.front().now) return false;
    if (++run == full) return true;
  }
  return false;
}

// The longest prefix of the slot's queue that shares one `now` (order per key is kept), capped.
std::vector<Batcher::Pending> Batcher::take_batch_locked(SlotQueue& slot,
                                                         std::vector<Pending>& expired) {
  std::vector<Pending> batch;
  const auto cap = static_cast<std::size_t>(std::max(1, options_.max_batch));
  const ScriptTarget::Deadline now = socket_now();
  while (!slot.queue.empty() && batch.size() < cap &&
         (batch.empty() || slot.queue.front().now == batch.front().now)) {
    if (slot.queue.front().deadline <= now) {
      expired.push_back(std::move(slot.queue.front()));
    } else {
      batch.push_back(std::move(slot.queue.front()));
    }
    slot.queue.pop_front();
  }
  ++slot.in_flight;
  return batch;
}

// One script call for the whole batch.
void Batcher::send(std::shared_ptr<std::vector<Pending>> batch) {
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(5 + batch->size() * 9);
  args->insert(args->end(), {"", "", std::to_string(batch->size())});
  for (const Pending& p : *batch) args->push_back(p.key);
  args->push_back(batch->front().now);
  args->push_back(std::to_string(options_.ttl_floor.count()));
  // A check with the limit of the check before it sends its cost alone, as -1 - cost
  // (lua/batch.lua): a batch of one limit's checks sends the limit once.
  const Pending* previous = nullptr;
  for (const Pending& p : *batch) {
    if (previous != nullptr &&
        std::equal(p.numbers.begin(), p.numbers.end() - 1, previous->numbers.begin())) {
      args->push_back(std::to_string(-1 - p.numbers.back()));
    } else {
      for (std::int64_t n : p.numbers) args->push_back(std::to_string(n));
    }
    previous = &p;
  }
  ScriptTarget::Deadline deadline = batch->front().deadline;
  for (const Pending& p : *batch) deadline = std::min(deadline, p.deadline);
  target_.run(batch->front().slot, {script_source(algorithm_), &script_sha(algorithm_)},
              std::move(args), deadline,
              [this, batch](Result<Reply> reply) { finish(*batch, std::move(reply)); });
}

void Batcher::finish(std::vector<Pending>& batch, Result<Reply> reply) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Result<Decision> decision =
        reply ? packed_decision_at(*reply, i, batch[i].numbers[0]) : std::unexpected(reply.error());
    if (!decision) {
      batch[i].done(std::unexpected(decision.error()));
    } else {
      batch[i].done(Decisions{*decision});
    }
  }
  // This call's in-flight place goes to what queued meanwhile, or back to the slot.
  dispatch(batch.front().slot, {}, {});
}

}  // namespace spillway::redis
