// RedisStore's Operation::kReset: forgets keys' state by deleting them (lua/reset.lua), one
// script call per hash slot, all in flight at once (src/redis/slot_calls.h). The answer: per key,
// whether it held state; or the first error (a reset can simply be sent again).
#include "spillway/redis_store.h"
#include "src/redis/redis_store_impl.h"
#include "src/redis/scripts.h"
#include "src/redis/slot_calls.h"

namespace spillway {

void RedisStore::Impl::reset(const StoreRequest& request, AllCallback done) {
  const std::span<const KeyedLimit> checks = request.checks();
  auto names = std::make_shared<std::vector<std::string>>();
  std::vector<std::uint16_t> slots;
  Decisions decisions;
  for (const KeyedLimit& check : checks) {
    names->push_back(storage_key(check.key, *check.limit));
    slots.push_back(slot_of(names->back()));
    decisions.push_back(Decision{.allowed = false, .limit = check.limit->limit()});
  }
  const auto args_of = [names](const redis::SlotCall& call) {
    auto args = std::make_shared<std::vector<std::string>>();
    args->reserve(3 + call.keys.size());
    *args = {"", "", std::to_string(call.keys.size())};
    for (std::size_t i : call.keys) args->push_back((*names)[i]);
    return args;
  };
  const auto read = [](const redis::SlotCall& call, const redis::Reply& reply,
                       Decisions& out) -> std::optional<Error> {
    if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != call.keys.size()) {
      return Error{Errc::kUnavailable, "redis: unexpected reply to a reset: " + reply.text};
    }
    for (std::size_t j = 0; j < call.keys.size(); ++j) {
      out[call.keys[j]].allowed = reply.elements[j].integer == 1;
    }
    return std::nullopt;
  };
  redis::run_per_slot(*target_, {redis::reset_script_source(), &redis::reset_script_sha(), true},
                      redis::calls_by_slot(slots), redis::deadline_in(options_.timeout), args_of,
                      read, std::move(decisions), std::move(done));
}

}  // namespace spillway
