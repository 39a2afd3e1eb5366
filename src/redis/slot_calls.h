// One script call per Redis Cluster hash slot over a request's keys, all in flight at once, for
// the operations that are not all-or-nothing (a reset, a charge without a check): each slot's
// keys are handled on their own, and the answer comes when every call has answered: a decision
// per key, or the first error (a slot's keys may then be done while another's are not).
// On one Redis every key is on slot 0: one call.
//
// Thread safety: as ScriptTarget::run; `done` runs once, on one of the target's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spillway/store.h"
#include "src/redis/script_target.h"

namespace spillway::redis {

// The keys of one slot, by their indices in the request (in order).
struct SlotCall {
  std::uint16_t slot;
  std::vector<std::size_t> keys;
};

// The calls for keys on `slots` (slots[i]: key i's), one per distinct slot, in slot order.
std::vector<SlotCall> calls_by_slot(std::span<const std::uint16_t> slots);

// A call's arguments: {"", "", numkeys, keys…, argv…} as ScriptTarget::run takes them.
using SlotArgs = std::function<std::shared_ptr<std::vector<std::string>>(const SlotCall&)>;
// Reads a call's reply into `decisions` (the entries of call.keys); an error when it is not as
// the script answers.
using SlotReply =
    std::function<std::optional<Error>(const SlotCall&, const Reply&, Decisions& decisions)>;

// Runs every call; `decisions` (one per key of the request) is what the replies fill in.
void run_per_slot(ScriptTarget& target, const Script& script, std::vector<SlotCall> calls,
                  ScriptTarget::Deadline deadline, const SlotArgs& args_of, SlotReply read,
                  Decisions decisions, Store::AllCallback done);

}  // namespace spillway::redis
