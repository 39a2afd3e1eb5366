// LeaseStore's table (spillway/lease_store.h), shared by the files that implement it: the entry
// of one (limit, key) and its lease, the 64 shards that hold the entries, the units a request
// took and has not finished deciding, a request waiting for leases, and the leftover of an ended
// lease. Private to src/open_store; LeaseStore::Impl (src/open_store/lease_store_impl.h) holds
// the shards.
//
// Units are the limit's units (a check's cost); times are Micros on the store's time base (a
// request's own `now` when given, else the clock).
// Thread safety: an Entry and its Shard's map are guarded by the Shard's mutex: every read or
// write of either holds it, except the const members `limit` and `key`. A Pending is guarded by
// its own mutex. TakenUnits, Leftover and Place are plain values of one thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spillway/lease.h"
#include "spillway/store.h"
#include "src/core/limit_key.h"
#include "src/core/remembered_denial.h"
#include "src/open_store/owned_request.h"

namespace spillway {

namespace lease_table {

inline constexpr std::size_t kShards = 64;
// How often a request is tried from its leases before it is decided exactly instead.
inline constexpr int kMaxRounds = 8;
// A key without a lease is forgotten after this many of its lease's max_age.
inline constexpr std::int64_t kIdleLeaseAges = 10;

// Whether the check is decided from a lease: it has a LeaseSpec and costs something, and its
// limit neither delays nor keeps a reserve for higher priorities (a wait, and what the other
// priorities left, are only exact from the shared state: such a check goes to the shared store,
// as an exact layer does; a policy refuses the pair, spillway/lease.h).
inline bool leased(const KeyedLimit& check, std::int64_t cost) {
  return check.lease != nullptr && cost > 0 && check.limit->max_delay() == 0 &&
         check.limit->reserved() == 0;
}

// Where (limit, key) lives: its shard, and its entry's name in a buffer of this thread's (valid
// until this thread's next place_of). No allocation once the buffer has grown.
struct Place {
  std::size_t shard;
  const std::string& entry_key;
};

inline Place place_of(const Limit& limit, std::string_view key) {
  thread_local std::string buffer;
  buffer.clear();
  append_limit_key(buffer, limit, key);
  return {std::hash<std::string>{}(buffer) % kShards, buffer};
}

// What ending a lease leaves to give back.
struct Leftover {
  std::string id;
  std::int64_t used = 0;
  std::int64_t unused = 0;
  std::optional<Micros> at;  // the settlement's `now`: the lease's own time base
};

struct Entry {
  Entry(const Limit& l, std::string_view k) : limit(l), key(k) {}
  const Limit limit;
  const std::string key;  // the shared store's key
  LeaseSpec spec;         // the latest one a check gave

  // The lease: `granted` units charged as reservation `id` at `acquired` (the charge's send
  // time), usable until `expires`; `used` taken from it (including units taken by a request that
  // is still deciding). No lease: id empty.
  std::string id;
  std::int64_t granted = 0;
  std::int64_t used = 0;
  Micros acquired = 0;
  Micros expires = 0;
  Decision shared{};             // the shared store's answer to the charge
  bool given_time = false;       // charged at a request's own `now`: returned at such a time
  std::uint64_t generation = 0;  // one more per lease: a put-back finds its own lease or none

  // The demand seen on the last lease that ended: `last_used` units over `last_span` µs.
  std::int64_t last_used = 0;
  Micros last_span = 0;

  // The shared store's last denial of a lease, while it answers (src/core/remembered_denial.h),
  // and the decision it gave.
  std::optional<RememberedDenial> denied;
  Decision denial{};

  // A lease request in flight, and who waits for it.
  bool acquiring = false;
  std::int64_t waiting_need = 0;
  std::vector<std::function<void(Result<void>)>> waiters;

  Micros last_seen = 0;
  // Requests that took units and wait for their exact layers' answer: they hold this entry's
  // address, so the sweep does not forget it meanwhile.
  int borrowers = 0;

  std::int64_t left() const { return granted - used; }
};

// On cache lines of its own: threads on two shards never share a line.
struct alignas(64) Shard {
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
};

// Units taken from a lease by a request that has not finished deciding.
struct Taken {
  Shard* shard;
  Entry* entry;
  std::uint64_t generation;
  std::int64_t units;
  bool borrowed;  // counted in the entry's borrowers (the request waits for exact layers)
};

// A request's taken units: up to four layers without an allocation.
class TakenUnits {
 public:
  void push_back(const Taken& taken) {
    if (count_ < first_.size()) {
      first_[count_++] = taken;
    } else {
      more_.push_back(taken);
    }
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = 0; i < count_; ++i) f(first_[i]);
    for (const Taken& taken : more_) f(taken);
  }

 private:
  std::array<Taken, 4> first_{};
  std::size_t count_ = 0;
  std::vector<Taken> more_;
};

// A request that waits for leases: its own copy, its callback, how often it was tried.
struct Pending {
  Pending(const StoreRequest& request, Store::AllCallback callback)
      : owned(request), done(std::move(callback)) {}
  OwnedRequest owned;
  Store::AllCallback done;
  int rounds = 0;
  std::mutex mutex;
  int waiting = 0;
  std::optional<Error> error;
};

// Ends `entry`'s lease at `now` (under its shard's lock): its demand is remembered, and what it
// still holds is returned for the caller to give back (outside the lock).
inline std::optional<Leftover> end_lease(Entry& entry, Micros now) {
  if (entry.id.empty()) return std::nullopt;
  entry.last_used = entry.used;
  entry.last_span = std::max<Micros>(0, std::min(now, entry.expires) - entry.acquired);
  Leftover leftover{.id = std::move(entry.id),
                    .used = entry.used,
                    .unused = entry.left(),
                    .at = entry.given_time ? std::optional<Micros>(std::max(now, entry.last_seen))
                                           : std::nullopt};
  entry.id.clear();
  entry.granted = 0;
  entry.used = 0;
  ++entry.generation;
  if (leftover.unused <= 0) return std::nullopt;
  return leftover;
}

}  // namespace lease_table

}  // namespace spillway
