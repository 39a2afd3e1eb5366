// Sends one algorithm's single checks to Redis (RedisStore::check): at once while fewer than
// max_in_flight script calls are out, otherwise queued and sent together when a call returns, up
// to max_batch checks in one call (each still decided exactly, in order, by lua/batch.lua).
// Checks of one call share their `now` argument and, on a cluster, their hash slot.
//
// Thread safety: submit() and close() from any thread. Callbacks run on the target's I/O
// threads. The Batcher must outlive the calls it sent (RedisStore closes it, then destroys the
// target, whose destruction fails the calls in flight).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
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
    std::array<std::int64_t, 6> numbers;  // limit, period, burst, limit_units, period_units, cost
    Store::Callback done;
  };

  void submit(Pending check);

  // From now on queued and new checks fail at once instead of going to the target.
  void close();

 private:
  std::vector<Pending> take_batch_locked();
  void send(std::shared_ptr<std::vector<Pending>> batch);
  void finish(std::vector<Pending>& batch, Result<Reply> reply);

  const Algorithm algorithm_;
  const RedisStoreOptions& options_;
  ScriptTarget& target_;
  std::mutex mutex_;
  std::deque<Pending> queue_;
  int in_flight_ = 0;
  bool closing_ = false;
};

}  // namespace spillway::redis
