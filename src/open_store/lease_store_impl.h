// LeaseStore's state and its work (spillway/lease_store.h keeps only a pointer to it): the 64
// shards of the lease table (src/open_store/lease_table.h), the counters, and the sweep task.
// One Impl per LeaseStore, made with it; its shards live inside it, so a check reaches its shard
// through the one pointer. Its methods are defined in lease_store.cc (deciding, clear_caches),
// lease_take.cc (attempt), lease_acquire.cc (acquire, send_acquire, give_back), lease_sweep.cc
// (sweep, release_all) and lease_metrics.cc (counts). Private to src/open_store.
//
// Units are the limit's (a check's cost); times are Micros on the store's time base (a request's
// own `now` when given, else the clock).
// Thread safety: every public method from any thread; an entry only under its shard's lock; the
// counters are relaxed atomics (the hot ones striped per thread); the wait for returns in flight
// under returns_mutex_.
// Ownership: `inner` is the LeaseStore's wrapped store, which outlives every call this object
// makes to it (LeaseStore's destructor stops the sweeper and gives leftovers back before it ends
// the wrapped store); callbacks given to the wrapped store hold `this`.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "spillway/lease_store.h"
#include "src/core/striped_counter.h"
#include "src/open_store/lease_table.h"

namespace spillway {

class LeaseStore::Impl {
 public:
  using Entry = lease_table::Entry;
  using Shard = lease_table::Shard;
  using Taken = lease_table::Taken;
  using TakenUnits = lease_table::TakenUnits;
  using Pending = lease_table::Pending;

  // Schedules the sweep task when options.sweep_interval > 0.
  Impl(Store& inner, LeaseStoreOptions options);
  // Ends the sweep task (if still scheduled).
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // LeaseStore's methods of the same names (lease_store.cc). decide takes the caller's callback
  // by reference (moved from when used), so passing a request on costs no copy or move of it.
  // clear_caches forgets the remembered denials only; the LeaseStore passes it on to the wrapped
  // store.
  void decide(const StoreRequest& request, AllCallback& done);
  void clear_caches();
  void sweep(std::optional<Micros> now = std::nullopt);
  void release_all(std::chrono::milliseconds timeout);
  Counts counts() const;
  // Ends the sweep task, waiting for a sweep under way; idempotent.
  void stop_sweeper();

 private:
  Store& inner() const { return inner_; }
  Micros time(std::optional<Micros> now) const { return now ? *now : clock_->now(); }
  // One attempt of a request from its leases (see lease_take.cc). `pending`: the request's own
  // copy once it had to wait (null on the first attempt: `request` and `done` are the caller's).
  void attempt(const StoreRequest& request, AllCallback& done, std::shared_ptr<Pending> pending);
  // Asks for a new lease of check's key for a request that needs `need` units; `waiter` runs
  // when it is answered (with the shared store's error, if any).
  void acquire(const KeyedLimit& check, std::int64_t need, std::optional<Micros> given, Micros now,
               std::function<void(Result<void>)> waiter);
  void send_acquire(Shard* shard, Entry* entry, std::int64_t size, std::int64_t need,
                    std::optional<Micros> given, Micros max_age, bool retried);
  // Settles lease `id` with the units it used (its leftover given back, as far as the refund rule
  // allows), then runs `then` (if any) once the shared store answered.
  void give_back(std::string id, std::int64_t used, std::int64_t unused, std::optional<Micros> now,
                 std::function<void()> then = nullptr);

  Store& inner_;
  const LeaseStoreOptions options_;
  const std::shared_ptr<Runtime> runtime_;
  const std::shared_ptr<const Clock> clock_;
  std::array<Shard, lease_table::kShards> shards_;

  // Added to by every local decision: striped, so that threads deciding from one lease do not
  // also share these lines.
  core::StripedCounter held_, used_, local_;
  std::atomic<std::int64_t> returned_{0}, lost_{0};
  std::atomic<std::uint64_t> acquire_calls_{0}, return_calls_{0};
  std::atomic<std::int64_t> returns_in_flight_{0};

  std::mutex returns_mutex_;
  std::condition_variable returns_done_;  // notified as each return is answered
  ScheduledTask sweeper_;                 // declared last: scheduled once everything above is whole
};

}  // namespace spillway
