// LeaseStore (spillway/lease_store.h): getting and giving back leases. acquire() asks the shared
// store for a new lease of one key (ending the one in place first and giving its leftover back);
// checks that need the same key meanwhile wait on the one request in flight. send_acquire()
// charges the lease as a reservation of `size` units and, if less is left, asks once more for
// what is; give_back() settles an ended lease with the units it used, so that the shared store
// refunds the rest as far as its refund rule allows (docs/SPEC.md §2.1).
// Units are the limit's; times the request's `now` when given, else the clock.
// Thread safety: from any thread; an entry only under its shard's lock, never held across a call
// to the shared store; the shared store's callbacks run on its threads.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "spillway/lease_store.h"
#include "src/open_store/lease_store_impl.h"

namespace spillway {

using lease_table::end_lease;
using lease_table::Leftover;
using lease_table::Place;
using lease_table::place_of;

void LeaseStore::Impl::acquire(const KeyedLimit& check, std::int64_t need,
                               std::optional<Micros> given, Micros now,
                               std::function<void(Result<void>)> waiter) {
  Place place = place_of(*check.limit, check.key);
  Shard& shard = shards_[place.shard];
  std::optional<Leftover> leftover;
  std::int64_t size = 0;
  Micros max_age = 0;
  Entry* entry = nullptr;
  {
    std::lock_guard lock(shard.mutex);
    entry = &shard.entries.try_emplace(place.entry_key, *check.limit, check.key).first->second;
    entry->spec = *check.lease;
    entry->waiters.push_back(std::move(waiter));
    entry->waiting_need += need;
    if (entry->acquiring) return;
    entry->acquiring = true;
    // The lease in place (if any) is over or too small for this request: end it.
    leftover = end_lease(*entry, now);
    if (leftover) held_.add(-leftover->unused);
    size = lease_size(entry->limit, entry->spec, need, entry->last_used, entry->last_span);
    // Enough for every check already waiting, within the cap.
    size = std::max(size, std::min(entry->waiting_need, lease_cap(entry->limit, entry->spec)));
    max_age = entry->spec.max_age;
  }
  if (!leftover) return send_acquire(&shard, entry, size, need, given, max_age, false);
  // The leftover first, then the new lease: a bucket refunds in full a key nothing touched since
  // the charge, and after other charges only what its busy stretch allows (docs/SPEC.md §2.1);
  // this process's own new charge would be such a touch.
  give_back(std::move(leftover->id), leftover->used, leftover->unused, leftover->at,
            [this, shard = &shard, entry, size, need, given, max_age] {
              send_acquire(shard, entry, size, need, given, max_age, false);
            });
}

void LeaseStore::Impl::send_acquire(Shard* shard, Entry* entry, std::int64_t size,
                                    std::int64_t need, std::optional<Micros> given, Micros max_age,
                                    bool retried) {
  std::string id = new_reservation_id();
  const ReservedLayer layers[] = {{.label = "lease", .metered = false}};
  const auto ttl = std::chrono::milliseconds((max_age + 999) / 1000) + options_.return_grace;
  const ReserveSpec spec{.id = id, .ttl = ttl, .layers = layers};
  const KeyedLimit one[] = {{entry->key, &entry->limit, size}};
  const Micros sent = time(given);
  auto request = StoreRequest::make_reserve(one, size, given, spec);
  if (!request) {
    std::vector<std::function<void(Result<void>)>> waiters;
    {
      std::lock_guard lock(shard->mutex);
      entry->acquiring = false;
      entry->waiting_need = 0;
      waiters.swap(entry->waiters);
    }
    for (auto& w : waiters) w(std::unexpected(request.error()));
    return;
  }
  acquire_calls_.fetch_add(1, std::memory_order_relaxed);
  inner().decide(*request, [this, shard, entry, size, need, given, sent, max_age, retried,
                            id = std::move(id)](Result<Decisions> got) mutable {
    std::vector<std::function<void(Result<void>)>> waiters;
    if (got && !(*got)[0].allowed && !retried && size > need && (*got)[0].retry_after != kNever) {
      // Less than asked for is left: ask once more for what is left (at least the need).
      const std::int64_t smaller = std::max(need, std::min(size - 1, (*got)[0].remaining));
      send_acquire(shard, entry, smaller, need, given, max_age, true);
      return;
    }
    {
      std::lock_guard lock(shard->mutex);
      entry->acquiring = false;
      entry->waiting_need = 0;
      waiters.swap(entry->waiters);
      if (got) {
        const Decision& d = (*got)[0];
        if (d.allowed) {
          entry->id = std::move(id);
          entry->granted = size;
          entry->used = 0;
          entry->acquired = sent;
          entry->expires = sent + lease_horizon(entry->limit, entry->spec, d);
          entry->shared = d;
          entry->given_time = given.has_value();
          ++entry->generation;
          entry->denied.reset();
          held_.add(size);
        } else {
          entry->denied = RememberedDenial::of(d, size, sent);
          entry->denial = d;
        }
      }
    }
    Result<void> result;
    if (!got) result = std::unexpected(got.error());
    for (auto& w : waiters) w(result);
  });
}

void LeaseStore::Impl::give_back(std::string id, std::int64_t used, std::int64_t unused,
                                 std::optional<Micros> now, std::function<void()> then) {
  return_calls_.fetch_add(1, std::memory_order_relaxed);
  returns_in_flight_.fetch_add(1, std::memory_order_relaxed);
  Settlement settlement{.id = id, .cancel = used == 0, .cost = used, .now = now};
  inner().settle(settlement, [this, unused, then = std::move(then)](Result<Settled> settled) {
    std::int64_t refunded = 0;
    if (settled) {
      for (const SettledLayer& layer : *settled) refunded += layer.refunded;
    }
    refunded = std::clamp<std::int64_t>(refunded, 0, unused);
    returned_.fetch_add(refunded, std::memory_order_relaxed);
    lost_.fetch_add(unused - refunded, std::memory_order_relaxed);
    {
      std::lock_guard lock(returns_mutex_);
      returns_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
    returns_done_.notify_all();
    if (then) then();
  });
}

}  // namespace spillway
