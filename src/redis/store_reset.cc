// RedisStore's Operation::kReset: forgets keys' state by deleting them (lua/reset.lua), one
// script call per hash slot, all in flight at once. The answer comes when every call answered:
// per key, whether it held state; or the first error (a slot's keys may then be deleted while
// another's are not: a reset can simply be sent again).
#include <map>
#include <mutex>

#include "spillway/redis_store.h"
#include "src/redis/script_target.h"
#include "src/redis/scripts.h"

namespace spillway {

void RedisStore::reset(const StoreRequest& request, AllCallback done) {
  const std::span<const KeyedLimit> checks = request.checks();
  struct Pending {
    std::mutex mutex;
    std::size_t left = 0;
    Decisions decisions;
    std::optional<Error> error;
    AllCallback done;
  };
  auto pending = std::make_shared<Pending>();
  pending->done = std::move(done);
  std::map<std::uint16_t, std::vector<std::size_t>> by_slot;
  std::vector<std::string> names;
  names.reserve(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    names.push_back(storage_key(checks[i].key, *checks[i].limit));
    by_slot[slot_of(names.back())].push_back(i);
    pending->decisions.push_back(Decision{.allowed = false, .limit = checks[i].limit->limit()});
  }
  pending->left = by_slot.size();
  const redis::Script script{redis::reset_script_source(), &redis::reset_script_sha(), true};
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (auto& [slot, indexes] : by_slot) {
    auto args = std::make_shared<std::vector<std::string>>();
    args->reserve(3 + indexes.size());
    *args = {"", "", std::to_string(indexes.size())};
    for (std::size_t i : indexes) args->push_back(names[i]);
    target_->run(slot, script, args, deadline,
                 [pending, indexes = std::move(indexes)](Result<redis::Reply> reply) {
                   std::unique_lock lock(pending->mutex);
                   if (!reply) {
                     if (!pending->error) pending->error = reply.error();
                   } else if (reply->type != redis::Reply::Type::kArray ||
                              reply->elements.size() != indexes.size()) {
                     if (!pending->error) {
                       pending->error = Error{Errc::kUnavailable,
                                              "redis: unexpected reply to a reset: " + reply->text};
                     }
                   } else {
                     for (std::size_t j = 0; j < indexes.size(); ++j) {
                       pending->decisions[indexes[j]].allowed = reply->elements[j].integer == 1;
                     }
                   }
                   if (--pending->left > 0) return;
                   lock.unlock();
                   if (pending->error) return pending->done(std::unexpected(*pending->error));
                   pending->done(std::move(pending->decisions));
                 });
  }
}

}  // namespace spillway
