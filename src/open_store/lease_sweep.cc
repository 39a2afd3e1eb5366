// LeaseStore (spillway/lease_store.h): ending leases by time and at exit. The sweep task calls
// sweep() every sweep_interval: it ends the leases whose time is over, gives their
// leftovers back, and forgets keys idle for kIdleLeaseAges max_age. release_all() (the destructor
// calls it) ends every lease and waits for the shared store's answers.
// Times: Micros on the store's time base (a lease charged at a request's own `now` ends at its
// own latest time).
// Thread safety: from any thread; each shard is locked in turn, and leftovers are given back
// after its lock is released.
#include <algorithm>
#include <vector>

#include "spillway/lease_store.h"
#include "src/open_store/lease_store_impl.h"

namespace spillway {

using lease_table::end_lease;
using lease_table::kIdleLeaseAges;
using lease_table::kShards;
using lease_table::Leftover;

void LeaseStore::Impl::sweep(std::optional<Micros> at) {
  const Micros now = time(at);
  std::vector<Leftover> leftovers;
  for (std::size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mutex);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      Entry& entry = it->second;
      if (entry.acquiring || entry.borrowers > 0) {
        ++it;
        continue;
      }
      if (!entry.id.empty() && now >= entry.expires) {
        if (auto leftover = end_lease(entry, now)) {
          held_.add(-leftover->unused);
          leftovers.push_back(std::move(*leftover));
        }
      }
      const bool idle = entry.id.empty() && (!entry.denied || entry.denied->expired(now)) &&
                        now - entry.last_seen >= kIdleLeaseAges * entry.spec.max_age;
      it = idle ? shard.entries.erase(it) : std::next(it);
    }
  }
  for (Leftover& l : leftovers) give_back(std::move(l.id), l.used, l.unused, l.at);
}

void LeaseStore::Impl::release_all(std::chrono::milliseconds timeout) {
  std::vector<Leftover> leftovers;
  const Micros now = clock_->now();
  for (std::size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mutex);
    for (auto& [key, entry] : shard.entries) {
      if (entry.acquiring) continue;
      // A lease charged at a given time ends at its own latest time, not the clock's.
      const Micros end = entry.given_time ? std::max(entry.acquired, entry.last_seen) : now;
      if (auto leftover = end_lease(entry, end)) {
        held_.add(-leftover->unused);
        leftovers.push_back(std::move(*leftover));
      }
    }
  }
  for (Leftover& l : leftovers) give_back(std::move(l.id), l.used, l.unused, l.at);
  std::unique_lock lock(returns_mutex_);
  returns_done_.wait_for(
      lock, timeout, [this] { return returns_in_flight_.load(std::memory_order_relaxed) == 0; });
}

}  // namespace spillway
