// RedisStore's reservations (usage-based limits, docs/SPEC.md §5.3): Operation::kReserve and
// settle(), and Operation::kCharge (usage charged after the work, without a reservation: one call
// of the settle script in its debt mode per hash slot). The record of a reservation lives in Redis,
// so any instance sharing the Redis settles it, once.
//
// One Redis (and Sentinel): the all-or-nothing script charges the keys and writes the record in
// one call; the settle script (lua/settle.lua) consumes it and settles every key in one call.
// A Redis Cluster: the keys of one request are on several slots, and a script touches one. Each
// slot's reserve call writes a part record next to its keys; once every slot charged, the home
// record (the reservation's layers and the slots) is written on the id's own slot
// (src/redis/cross_slot.h). A settlement consumes the home record first (so two settlers cannot
// both win), which resolves every layer's actual cost; then each slot's part record is consumed
// with its keys, all slots at once.
#include <algorithm>
#include <cctype>
#include <mutex>

#include "spillway/redis_store.h"
#include "src/core/inline_completion.h"
#include "src/core/reservation_errors.h"
#include "src/redis/cross_slot.h"
#include "src/redis/error_cause.h"
#include "src/redis/key_slot.h"
#include "src/redis/redis_store_impl.h"
#include "src/redis/script_reply.h"
#include "src/redis/script_target.h"
#include "src/redis/scripts.h"
#include "src/redis/slot_calls.h"
#include "src/redis/storage_key.h"

namespace spillway {
namespace {

// What one call of lua/settle.lua answered.
struct SettleReply {
  struct Layer {
    std::string label;
    std::int64_t estimate = 0;
    std::int64_t actual = 0;
    bool hold = false;
  };
  struct Applied {
    std::size_t layer = 0;  // 0-based index into the reservation's layers
    std::int64_t done = 0;  // units refunded or charged
    Decision after;
  };
  // 0 settled, 1 no record, 2 settled before, 3 unknown label, 4 a release of no ticket
  std::int64_t status = 0;
  std::string text;  // status 3: the label
  std::vector<Layer> layers;
  std::vector<std::uint16_t> slots;
  std::vector<Applied> applied;
};

Error bad_reply() {
  return Error{Errc::kInternal, "unexpected reply shape from the settle script"};
}

Result<SettleReply> read_settle_reply(const Result<redis::Reply>& reply) {
  if (!reply) return std::unexpected(reply.error());
  if (reply->is_error()) {
    return std::unexpected(redis::reply_error(*reply));
  }
  if (reply->type != redis::Reply::Type::kArray || reply->elements.size() < 2) {
    return std::unexpected(bad_reply());
  }
  const auto& e = reply->elements;
  std::size_t at = 0;
  const auto integer = [&](std::int64_t& out) {
    if (at >= e.size() || e[at].type != redis::Reply::Type::kInteger) return false;
    out = e[at++].integer;
    return true;
  };
  const auto text = [&](std::string& out) {
    if (at >= e.size() || e[at].type != redis::Reply::Type::kString) return false;
    out = e[at++].text;
    return true;
  };
  SettleReply out;
  if (!integer(out.status) || !text(out.text)) return std::unexpected(bad_reply());
  if (out.status != 0) return out;
  std::int64_t count = 0;
  if (!integer(count) || count < 0) return std::unexpected(bad_reply());
  for (std::int64_t j = 0; j < count; ++j) {
    SettleReply::Layer layer;
    std::int64_t hold = 0;
    if (!text(layer.label) || !integer(layer.estimate) || !integer(layer.actual) ||
        !integer(hold)) {
      return std::unexpected(bad_reply());
    }
    layer.hold = hold == 1;
    out.layers.push_back(std::move(layer));
  }
  if (!integer(count) || count < 0) return std::unexpected(bad_reply());
  for (std::int64_t j = 0; j < count; ++j) {
    std::int64_t slot = 0;
    if (!integer(slot) || slot < 0 || slot >= redis::kClusterSlots) {
      return std::unexpected(bad_reply());
    }
    out.slots.push_back(static_cast<std::uint16_t>(slot));
  }
  while (at < e.size()) {
    std::int64_t layer = 0, allowed = 0;
    SettleReply::Applied applied;
    Decision& d = applied.after;
    if (!integer(layer) || layer < 1 || !integer(applied.done) || !integer(allowed) ||
        !integer(d.limit) || !integer(d.remaining) || !integer(d.retry_after) ||
        !integer(d.reset_after)) {
      return std::unexpected(bad_reply());
    }
    applied.layer = static_cast<std::size_t>(layer - 1);
    d.allowed = allowed == 1;
    out.applied.push_back(applied);
  }
  return out;
}

// A settlement on its way: the home record's answer, then the other slots'.
struct PendingSettle {
  std::string id;
  std::vector<std::string> labels;
  Settled settled;  // one per layer, from the home record's answer
  std::mutex mutex;
  std::size_t left = 0;
  std::optional<Error> error;
  Store::SettleCallback done;

  // Fills in the keys a record settled; false when one names no layer of the reservation.
  bool apply(const SettleReply& reply) {
    for (const SettleReply::Applied& a : reply.applied) {
      if (a.layer >= settled.size()) return false;
      SettledLayer& layer = settled[a.layer];
      (layer.actual > layer.estimate ? layer.charged : layer.refunded) = a.done;
      layer.after = a.after;
    }
    return true;
  }
};

// The error a record's status stands for (status 0: none).
std::optional<Error> status_error(const SettleReply& reply, std::string_view id) {
  switch (reply.status) {
    case 0:
      return std::nullopt;
    case 1:
      return reservation_not_found(id);
    case 2:
      return reservation_already_settled(id);
    case 3: {
      std::vector<std::string> labels;
      for (const SettleReply::Layer& l : reply.layers) labels.push_back(l.label);
      return reservation_has_no_layer(reply.text, labels);
    }
    case 4:
      return reservation_not_a_ticket(id);
    default:
      return bad_reply();
  }
}

// Ids are base64url (new_reservation_id): anything else names no record, and is never made part
// of a key name.
bool is_base64url(std::string_view id) {
  return std::all_of(id.begin(), id.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == '-' || c == '_'; });
}

// Redis at its maxmemory (maxmemory-policy noeviction) refuses the script's first write with
// "OOM command not allowed...": nothing was charged and no record could be written. To the
// caller that is a full store (kStoreFull: the server refuses the reserve, whatever on_error
// says), not an outage.
Result<Decisions> out_of_memory_as_full(Result<Decisions> result) {
  if (!result && result.error().code == Errc::kUnavailable &&
      redis::names_redis_code(result.error().message, "OOM")) {
    return std::unexpected(Error{Errc::kStoreFull,
                                 "the reservation store is full: redis is at its maxmemory, no "
                                 "record can be written; nothing was charged (" +
                                     result.error().message + ")"});
  }
  return result;
}

}  // namespace

void RedisStore::Impl::reserve(const StoreRequest& request, AllCallback done) {
  done = [then = std::move(done)](Result<Decisions> result) {
    then(out_of_memory_as_full(std::move(result)));
  };
  const ReserveSpec& spec = *request.reserve();
  if (!is_base64url(spec.id)) {
    return complete_inline(
        done, Result<Decisions>(std::unexpected(Error{
                  Errc::kInvalidArgument, "a reservation id must be base64url characters", "id"})));
  }
  std::vector<redis::SlotKey> keys = slot_keys(request);
  // The reservation's layers, as both records keep them: m, then (label, metered, estimate);
  // metered is 'h' for a concurrency slot (ReservedLayer::hold).
  std::vector<std::string> layers;
  layers.reserve(1 + 3 * keys.size());
  layers.push_back(std::to_string(keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    layers.insert(layers.end(), {std::string(spec.layers[i].label),
                                 spec.layers[i].hold ? "h" : (spec.layers[i].metered ? "1" : "0"),
                                 std::to_string(request.cost_of(i))});
  }
  const std::optional<Micros> now = request.now();
  const std::string now_arg = now ? std::to_string(*now) : std::string();
  const std::string home_key = redis::reservation_home_key(options_.key_prefix, spec.id);
  if (target_->one_node()) {
    // One call: the keys and the record (its ttl, each key's index, the layers, no other slot).
    std::vector<std::string> record_args;
    record_args.reserve(2 + keys.size() + layers.size());
    record_args.push_back(std::to_string(spec.ttl.count()));
    for (std::size_t i = 0; i < keys.size(); ++i) record_args.push_back(std::to_string(i + 1));
    record_args.insert(record_args.end(), layers.begin(), layers.end());
    record_args.push_back("0");
    return all_or_nothing_call(keys, now_arg, home_key, record_args, std::move(done));
  }
  // A cluster: a part record on each slot; each must land on its keys' slot, which a key prefix
  // with a brace of its own could prevent.
  for (const redis::SlotKey& k : keys) {
    if (redis::key_slot(redis::reservation_part_key(options_.key_prefix, spec.id, k.slot)) !=
        k.slot) {
      return complete_inline(
          done, Result<Decisions>(std::unexpected(Error{
                    Errc::kInvalidArgument,
                    "reservations on a Redis Cluster need a key prefix whose braces do not make "
                    "a hash tag (redis key prefix " +
                        options_.key_prefix + ")",
                    "key_prefix"})));
    }
  }
  auto records = std::make_shared<redis::ReservationRecords>();
  records->prefix = options_.key_prefix;
  records->id = std::string(spec.id);
  records->home_key = home_key;
  records->home_slot = redis::key_slot(home_key);
  records->ttl = spec.ttl;
  records->layers = std::move(layers);
  redis::check_all_across_slots(
      *target_, std::move(keys), now_arg, options_.ttl_floor, options_.cluster_dry_run_first,
      redis::deadline_in(options_.timeout), std::move(done), std::move(records));
}

void RedisStore::Impl::settle(const Settlement& settlement, SettleCallback done) {
  if (std::optional<Error> problem = settlement_problem(settlement)) {
    return complete_inline(done, Result<Settled>(std::unexpected(*problem)));
  }
  if (!is_base64url(settlement.id)) {
    return complete_inline(done,
                           Result<Settled>(std::unexpected(reservation_not_found(settlement.id))));
  }
  const std::string now_arg = settlement.now ? std::to_string(*settlement.now) : std::string();
  const std::string ttl_floor = std::to_string(options_.ttl_floor.count());
  const redis::ScriptTarget::Deadline deadline = redis::deadline_in(options_.timeout);
  const std::string home_key = redis::reservation_home_key(options_.key_prefix, settlement.id);
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(9 + 2 * settlement.costs.size());
  args->insert(args->end(), {"", "", "1", home_key, now_arg, ttl_floor, "home",
                             settlement.release ? "r" : (settlement.cancel ? "1" : "0"),
                             settlement.cost ? std::to_string(*settlement.cost) : ""});
  for (const LayerCost& c : settlement.costs) {
    args->insert(args->end(), {std::string(c.label), std::to_string(c.cost)});
  }
  auto pending = std::make_shared<PendingSettle>();
  pending->id = std::string(settlement.id);
  pending->done = std::move(done);
  const redis::Script script{redis::settle_script_source(), &redis::settle_script_sha()};
  target_->run(
      slot_of(home_key), script, std::move(args), deadline,
      [target = target_.get(), prefix = options_.key_prefix, pending, script, now_arg, ttl_floor,
       deadline](Result<redis::Reply> reply) {
        Result<SettleReply> home = read_settle_reply(reply);
        if (!home) return pending->done(std::unexpected(home.error()));
        if (std::optional<Error> error = status_error(*home, pending->id)) {
          return pending->done(std::unexpected(*error));
        }
        for (const SettleReply::Layer& l : home->layers) {
          pending->settled.push_back(
              {.label = l.label, .estimate = l.estimate, .actual = l.actual, .hold = l.hold});
        }
        if (!pending->apply(*home)) return pending->done(std::unexpected(bad_reply()));
        if (home->slots.empty()) return pending->done(std::move(pending->settled));
        // The other slots, all at once, with every layer's actual cost.
        pending->left = home->slots.size();
        for (std::uint16_t slot : home->slots) {
          auto part = std::make_shared<std::vector<std::string>>();
          part->insert(part->end(),
                       {"", "", "1", redis::reservation_part_key(prefix, pending->id, slot),
                        now_arg, ttl_floor, "part"});
          for (const SettledLayer& l : pending->settled) part->push_back(std::to_string(l.actual));
          target->run(slot, script, std::move(part), deadline,
                      [pending, slot](Result<redis::Reply> answer) {
                        Result<SettleReply> got = read_settle_reply(answer);
                        std::unique_lock lock(pending->mutex);
                        if (!got) {
                          if (!pending->error) pending->error = got.error();
                        } else if (got->status != 0) {
                          // Consumed or gone on that slot although its home was open: its
                          // estimates stay charged (an under-admission, never more).
                          if (!pending->error) {
                            pending->error =
                                Error{Errc::kInternal, "reservation " + pending->id +
                                                           ": its record on slot " +
                                                           std::to_string(slot) + " is gone"};
                          }
                        } else if (!pending->apply(*got)) {
                          if (!pending->error) pending->error = bad_reply();
                        }
                        if (--pending->left > 0) return;
                        lock.unlock();
                        if (pending->error) return pending->done(std::unexpected(*pending->error));
                        pending->done(std::move(pending->settled));
                      });
        }
      });
}

void RedisStore::Impl::charge(const StoreRequest& request, AllCallback done) {
  auto keys = std::make_shared<std::vector<redis::SlotKey>>(slot_keys(request));
  std::vector<std::uint16_t> slots;
  for (const redis::SlotKey& k : *keys) slots.push_back(k.slot);
  const std::optional<Micros> now = request.now();
  const auto args_of =
      [keys, now = now ? std::to_string(*now) : std::string(),
       ttl_floor = std::to_string(options_.ttl_floor.count())](const redis::SlotCall& call) {
        auto args = std::make_shared<std::vector<std::string>>();
        args->reserve(6 + call.keys.size() * 10);
        *args = {"", "", std::to_string(call.keys.size())};
        for (std::size_t i : call.keys) args->push_back((*keys)[i].key);
        args->insert(args->end(), {now, ttl_floor, "debt"});
        for (std::size_t i : call.keys) {
          for (std::int64_t n : (*keys)[i].numbers) args->push_back(std::to_string(n));
        }
        return args;
      };
  const auto read = [](const redis::SlotCall& call, const redis::Reply& reply,
                       Decisions& out) -> std::optional<Error> {
    for (std::size_t j = 0; j < call.keys.size(); ++j) {
      Result<Decision> d = redis::decision_at(reply, j);
      if (!d) return d.error();
      out[call.keys[j]] = *d;
    }
    return std::nullopt;
  };
  redis::run_per_slot(*target_, {redis::settle_script_source(), &redis::settle_script_sha()},
                      redis::calls_by_slot(slots), redis::deadline_in(options_.timeout), args_of,
                      read, Decisions(keys->size()), std::move(done));
}

}  // namespace spillway
