#include "src/redis/slot_calls.h"

#include <map>
#include <mutex>

#include "src/redis/script_reply.h"

namespace spillway::redis {

std::vector<SlotCall> calls_by_slot(std::span<const std::uint16_t> slots) {
  std::map<std::uint16_t, std::vector<std::size_t>> by_slot;
  for (std::size_t i = 0; i < slots.size(); ++i) by_slot[slots[i]].push_back(i);
  std::vector<SlotCall> calls;
  calls.reserve(by_slot.size());
  for (auto& [slot, keys] : by_slot) calls.push_back({slot, std::move(keys)});
  return calls;
}

void run_per_slot(ScriptTarget& target, const Script& script, std::vector<SlotCall> calls,
                  ScriptTarget::Deadline deadline, const SlotArgs& args_of, SlotReply read,
                  Decisions decisions, Store::AllCallback done) {
  struct Pending {
    std::mutex mutex;
    std::size_t left = 0;
    std::vector<SlotCall> calls;
    Decisions decisions;
    std::optional<Error> error;
    SlotReply read;
    Store::AllCallback done;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = calls.size();
  pending->calls = std::move(calls);
  pending->decisions = std::move(decisions);
  pending->read = std::move(read);
  pending->done = std::move(done);
  for (std::size_t c = 0; c < pending->calls.size(); ++c) {
    target.run(pending->calls[c].slot, script, args_of(pending->calls[c]), deadline,
               [pending, c](Result<Reply> reply) {
                 std::unique_lock lock(pending->mutex);
                 if (pending->error) {
                   // The first error is the answer.
                 } else if (!reply) {
                   pending->error = reply.error();
                 } else if (reply->is_error()) {
                   pending->error = reply_error(*reply);
                 } else {
                   pending->error = pending->read(pending->calls[c], *reply, pending->decisions);
                 }
                 if (--pending->left > 0) return;
                 lock.unlock();
                 if (pending->error) return pending->done(std::unexpected(*pending->error));
                 pending->done(std::move(pending->decisions));
               });
  }
}

}  // namespace spillway::redis
