// Sends one algorithm's single checks to Redis (RedisStore::decide, a request of one key): at
// once while fewer than max_in_flight script calls are out, otherwise queued and sent together
// when a call returns, up to max_batch checks in one call (each still decided exactly, in order,
// by lua/batch.lua); a
// queue whose front holds a whole batch (max_batch > 1 checks with one `now`) sends it at once,
// whatever is in flight. So the batch size follows the load: one check per call when alone,
// fuller calls as checks pile up.
// A check's time (the store's timeout) runs from submit(): time spent queued counts, a check
// whose time ran out in the queue is answered kTimeout without being sent, and a batch's call
// has the earliest deadline of its checks.
// Checks of one call share their `now` argument and their hash slot. On a cluster every slot has
// its own queue and its own max_in_flight (slots live on different nodes and never share a
// call); on one Redis every check has slot 0, so there is one queue.
//
// Thread safety: submit() and close() from any thread. Callbacks run on the target's I/O
// threads. The Batcher must outlive the calls it sent (RedisStore closes it, then destroys the
// target, whose destruction fails the calls in flight).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "spillway/limit.h"
#include "spillway/redis_store.h"
#include "src/redis/script_target.h"

namespace spillway::redis {

class Batcher {
 public:
  Batcher(Algorithm algorithm, const RedisStoreOptions& options, ScriptTarget& target)
      : algorithm_(algorithm), options_(options), target_(target) {}

  struct Pending {
    std::string key;                      // the Redis key
    std::uint16_t slot;                   // key_slot(key)
    std::string now;                      // "" for the server's TIME
    std::array<std::int64_t, 8> numbers;  // limit, period, burst, limit_units, period_units,
                                          // max_delay, reserved, cost
    ScriptTarget::Deadline deadline;      // when the check was submitted + the store's timeout
    Store::AllCallback done;              // gets one decision (the batcher's checks are single)
  };

  void submit(Pending check);

  // From now on queued and new checks fail at once instead of going to the target.
  void close();

 private:
  struct SlotQueue {
    std::deque<Pending> queue;
    int in_flight = 0;
  };
  bool front_batch_full(const SlotQueue& slot) const;
  // The next batch of the slot's queue (empty when none is left), and the checks whose time ran
  // out while they waited (`expired`, answered kTimeout by the caller outside the lock).
  std::vector<Pending> take_batch_locked(SlotQueue& slot, std::vector<Pending>& expired);
  // Answers the expired checks, then sends the batch (or, if empty, releases its in-flight slot).
  void dispatch(std::uint16_t slot, std::vector<Pending> batch, std::vector<Pending> expired);
  void send(std::shared_ptr<std::vector<Pending>> batch);
  void finish(std::vector<Pending>& batch, Result<Reply> reply);

  const Algorithm algorithm_;
  const RedisStoreOptions& options_;
  ScriptTarget& target_;
  std::mutex mutex_;
  std::unordered_map<std::uint16_t, SlotQueue> slots_;  // a slot's entry lives while it is busy
  bool closing_ = false;
};

}  // namespace spillway::redis
