#include "src/redis/cross_slot.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "src/redis/script_reply.h"
#include "src/redis/scripts.h"
#include "src/redis/storage_key.h"

namespace spillway::redis {
namespace {

// What undoes one key's charge (lua/refund.lua's three arguments).
struct Undo {
  std::string before;  // DUMP before the charge, "" when absent
  std::int64_t expires;
  std::string written;  // DUMP after the charge
};

struct Group {
  std::uint16_t slot;
  std::vector<std::size_t> layers;  // indices into the request's keys, in order
  std::string part_record;          // a reservation's: its record on this slot (else empty)
  // The reply:
  std::optional<Error> error;
  std::vector<Decision> decisions;
  bool charged = false;  // every layer admitted and the cost was written
  // Every layer admitted (reserve: charged; dry: would be): each one's state before, reported
  // if another slot denies.
  std::vector<Decision> peeks;
  std::vector<Undo> undo;
};

struct Request {
  Request(ScriptTarget& target_, std::vector<SlotKey> keys_, std::string now_,
          std::chrono::milliseconds ttl_floor_, ScriptTarget::Deadline deadline_,
          Store::AllCallback done_, std::shared_ptr<const ReservationRecords> records_)
      : target(target_),
        keys(std::move(keys_)),
        now(std::move(now_)),
        ttl_floor(ttl_floor_),
        deadline(deadline_),
        done(std::move(done_)),
        records(std::move(records_)) {}
  ScriptTarget& target;
  const std::vector<SlotKey> keys;
  const std::string now;  // "" for the server's TIME
  const std::chrono::milliseconds ttl_floor;
  const ScriptTarget::Deadline deadline;
  std::vector<Group> groups;  // one per slot, in the order of their first key
  Store::AllCallback done;
  const std::shared_ptr<const ReservationRecords> records;  // a reservation's, or null
  std::optional<Error> home_error;                          // the home record could not be written
  std::mutex mutex;
  std::size_t left = 0;  // calls not yet answered
};

// Reads a reply of the all-or-nothing script into `group`: the decisions and, when every layer
// admitted, the peeks; for a reservation that charged, also what undoes the charge.
void read_reply(Group& group, Result<Reply> reply, bool reserving) {
  if (!reply) {
    group.error = reply.error();
    return;
  }
  const std::size_t n = group.layers.size();
  bool all = true;
  for (std::size_t i = 0; i < n; ++i) {
    Result<Decision> d = decision_at(*reply, i);
    if (!d) {
      group.error = d.error();
      return;
    }
    all = all && d->allowed;
    group.decisions.push_back(*d);
  }
  if (!all) return;
  const auto& e = reply->elements;
  if (!reserving) {  // a dry run: the peeks follow the decisions
    for (std::size_t i = 0; i < n; ++i) {
      Result<Decision> peek = decision_at(*reply, n + i);
      if (!peek) {
        group.error = peek.error();
        return;
      }
      group.peeks.push_back(*peek);
    }
    return;
  }
  if (e.size() != 2 * n * kFieldsPerDecision + 3 * n) {
    group.error = Error{Errc::kInternal, "unexpected reply shape from the reserve script"};
    return;
  }
  group.charged = true;
  for (std::size_t i = 0; i < n; ++i) {
    Result<Decision> peek = decision_at(*reply, n + i);
    const Reply& before = e[2 * n * kFieldsPerDecision + 3 * i];
    const Reply& expires = e[2 * n * kFieldsPerDecision + 3 * i + 1];
    const Reply& written = e[2 * n * kFieldsPerDecision + 3 * i + 2];
    if (!peek || before.type != Reply::Type::kString || expires.type != Reply::Type::kInteger ||
        written.type != Reply::Type::kString) {
      group.error = Error{Errc::kInternal, "unexpected undo fields from the reserve script"};
      return;
    }
    group.peeks.push_back(*peek);
    group.undo.push_back({before.text, expires.integer, written.text});
  }
}

// Every call has returned: the answer, in the order of the keys.
void answer(Request& request) {
  if (request.home_error) return request.done(std::unexpected(*request.home_error));
  bool admitted = true;
  for (const Group& g : request.groups) {
    if (g.error) return request.done(std::unexpected(*g.error));
    admitted = admitted && g.charged;
  }
  Decisions decisions(request.keys.size());
  for (const Group& g : request.groups) {
    const bool peeked = !admitted && !g.peeks.empty();
    for (std::size_t i = 0; i < g.layers.size(); ++i) {
      decisions[g.layers[i]] = peeked ? g.peeks[i] : g.decisions[i];
    }
  }
  request.done(std::move(decisions));
}

// Any slot denied or failed: undo the charges of the slots that took them, then answer.
void refund(const std::shared_ptr<Request>& request) {
  std::vector<std::size_t> charged;
  for (std::size_t g = 0; g < request->groups.size(); ++g) {
    const Group& group = request->groups[g];
    const bool wrote = std::any_of(group.layers.begin(), group.layers.end(), [&](std::size_t i) {
      return request->keys[i].numbers.back() > 0;  // the layer's cost
    });
    // A reservation's slot also wrote its part record, which the refund deletes.
    if (group.charged && (wrote || request->records)) charged.push_back(g);
  }
  if (charged.empty()) return answer(*request);
  request->left = charged.size();
  for (std::size_t g : charged) {
    const Group& group = request->groups[g];
    auto args = std::make_shared<std::vector<std::string>>();
    const std::size_t numkeys = group.layers.size() + (request->records ? 1 : 0);
    args->insert(args->end(), {"", "", std::to_string(numkeys)});
    for (std::size_t layer : group.layers) args->push_back(request->keys[layer].key);
    if (request->records) args->push_back(group.part_record);
    for (const Undo& u : group.undo) {
      args->insert(args->end(), {u.before, std::to_string(u.expires), u.written});
    }
    request->target.run(group.slot, {refund_script_source(), &refund_script_sha()}, std::move(args),
                        request->deadline, [request](Result<Reply>) {
                          // A lost refund keeps the charge: an under-admission, never more.
                          std::unique_lock lock(request->mutex);
                          if (--request->left > 0) return;
                          lock.unlock();
                          answer(*request);
                        });
  }
}

// One call of the all-or-nothing script per slot, all at once, in `mode` ("1" reserve, "2" dry);
// `then` runs once every call has answered.
void call_every_slot(const std::shared_ptr<Request>& request, const char* mode,
                     void (*then)(const std::shared_ptr<Request>&)) {
  request->left = request->groups.size();
  for (std::size_t g = 0; g < request->groups.size(); ++g) {
    const Group& group = request->groups[g];
    auto args = std::make_shared<std::vector<std::string>>();
    const ReservationRecords* records = request->records.get();
    args->reserve(10 + group.layers.size() * 9);
    args->insert(args->end(), {"", "", std::to_string(group.layers.size() + (records ? 1 : 0))});
    for (std::size_t layer : group.layers) args->push_back(request->keys[layer].key);
    if (records) args->push_back(group.part_record);
    args->insert(args->end(), {request->now, std::to_string(request->ttl_floor.count()), mode,
                               records ? std::to_string(records->ttl.count() + 1000) : ""});
    for (std::size_t layer : group.layers) {
      for (std::int64_t n : request->keys[layer].numbers) args->push_back(std::to_string(n));
    }
    if (records) {
      // Each layer's index in the reservation (1-based); no layer list, no other slots: those
      // are the home record's.
      for (std::size_t layer : group.layers) args->push_back(std::to_string(layer + 1));
      args->insert(args->end(), {"0", "0"});
    }
    // Mode "2" (dry) writes nothing: safe to send again if its connection is lost.
    const Script script{all_or_nothing_script_source(), &all_or_nothing_script_sha(),
                        /*writes=*/mode[0] != '2'};
    request->target.run(group.slot, script, std::move(args), request->deadline,
                        [request, g, then, reserving = mode[0] == '1'](Result<Reply> reply) {
                          std::unique_lock lock(request->mutex);
                          read_reply(request->groups[g], std::move(reply), reserving);
                          if (--request->left > 0) return;
                          lock.unlock();
                          then(request);
                        });
  }
}

// Every slot of a reservation charged: writes its home record (the layers, and the slots of its
// part records), then answers; refunds every slot when that fails.
void write_home_record(const std::shared_ptr<Request>& request) {
  const ReservationRecords& records = *request->records;
  auto args = std::make_shared<std::vector<std::string>>();
  args->insert(args->end(), {"", "", "1", records.home_key, request->now,
                             std::to_string(request->ttl_floor.count()), "0",
                             std::to_string(records.ttl.count())});
  args->insert(args->end(), records.layers.begin(), records.layers.end());
  args->push_back(std::to_string(request->groups.size()));
  for (const Group& g : request->groups) args->push_back(std::to_string(g.slot));
  request->target.run(records.home_slot,
                      {all_or_nothing_script_source(), &all_or_nothing_script_sha()},
                      std::move(args), request->deadline, [request](Result<Reply> reply) {
                        if (reply && !reply->is_error()) return answer(*request);
                        request->home_error = reply ? reply_error(*reply) : reply.error();
                        refund(request);
                      });
}

// After the reservations: admitted, or refund what was charged.
void after_reserve(const std::shared_ptr<Request>& request) {
  bool admitted = true;
  for (const Group& each : request->groups) admitted = admitted && !each.error && each.charged;
  if (admitted && request->records) return write_home_record(request);
  if (admitted) return answer(*request);
  refund(request);
}

// After the dry run: a slot that would deny answers the request at once (no charge anywhere, so
// nothing to refund); when every slot would admit, reserve.
void after_dry_run(const std::shared_ptr<Request>& request) {
  bool all_would_admit = true;
  for (const Group& each : request->groups) {
    all_would_admit = all_would_admit && !each.error;
    for (const Decision& d : each.decisions) all_would_admit = all_would_admit && d.allowed;
  }
  // Nothing was charged, so answer() reports every slot's dry decisions (or the first error).
  if (!all_would_admit) return answer(*request);
  for (Group& each : request->groups) {
    each = Group{.slot = each.slot, .layers = each.layers, .part_record = each.part_record};
  }
  call_every_slot(request, "1", after_reserve);
}

}  // namespace

void check_all_across_slots(ScriptTarget& target, std::vector<SlotKey> keys, std::string now,
                            std::chrono::milliseconds ttl_floor, bool dry_run_first,
                            ScriptTarget::Deadline deadline, Store::AllCallback done,
                            std::shared_ptr<const ReservationRecords> records) {
  auto request = std::make_shared<Request>(target, std::move(keys), std::move(now), ttl_floor,
                                           deadline, std::move(done), std::move(records));
  std::map<std::uint16_t, std::size_t> by_slot;
  for (std::size_t i = 0; i < request->keys.size(); ++i) {
    auto [it, fresh] = by_slot.try_emplace(request->keys[i].slot, request->groups.size());
    if (fresh) {
      Group group{.slot = request->keys[i].slot};
      if (request->records) {
        group.part_record =
            reservation_part_key(request->records->prefix, request->records->id, group.slot);
      }
      request->groups.push_back(std::move(group));
    }
    request->groups[it->second].layers.push_back(i);
  }
  if (dry_run_first) return call_every_slot(request, "2", after_dry_run);
  call_every_slot(request, "1", after_reserve);
}

}  // namespace spillway::redis
