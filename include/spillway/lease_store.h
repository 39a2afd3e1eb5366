// LeaseStore: shared limits decided in the process from quota leases (docs/SPEC.md §2.3).
//
// A wrapper around a shared store (Redis, a Cluster, or any store that keeps reservations). A key
// checked with a LeaseSpec (KeyedLimit::lease) is decided from a lease: a block of units this
// process charged to the shared key beforehand, as one reservation (kReserve) of the block, so a
// unit is charged in the shared state before it is admitted anywhere. While the lease has units
// and its time (spillway/lease.h: lease_horizon) has not run out, checks take units from it in
// the process: no round trip. When it runs out, the next check asks for a new one (one call;
// checks that need the same key meanwhile wait for that call rather than send their own). When a
// lease ends with units left (its time is over, or a check needs more than it has), the leftover
// is given back by settling the reservation with the units used: the shared store's refund rule
// (docs/SPEC.md §2.1) gives back at most what had never been charged, never more.
//
// Lease sizes follow this process's demand: about max_age of the rate seen on its last lease,
// at least the request's cost, at most max_share of the limit. An idle key holds nothing: its
// lease ends, is given back, and is forgotten.
//
// All-or-nothing across layers: a request's leased layers take their units from their leases
// first; its exact layers (no lease, or cost 0) are then checked by the shared store in one
// call; if any layer denies, the units taken go back to their leases. A denial the shared store
// gave to a lease request of exactly the request's cost is remembered until its retry_after has
// passed (as OverLimitCache does): denied checks do not each cost a round trip.
//
// A limit with a max_delay (shaping, Limit::with_max_delay) is never leased: its wait is only
// exact from the shared state, so its checks go to the shared store as an exact layer's do (a
// Policy refuses the pair outright).
//
// Answers from a lease have Decision::local set; their `remaining` is the shared store's remaining
// when the lease was charged plus what the lease still holds (an estimate: other processes' use
// since is unknown), their `reset_after` the shared store's, less the time since.
//
// Other operations (reset, reserve, charge) and settlements go to the shared store as they are;
// a reset also ends this process's leases of its keys (their units are not given back).
//
// Faults: when the shared store fails, leases already held keep deciding until their time is
// over; a check that needs a new lease gets the store's error (the server's on_error decides). A
// process that dies with a lease leaves its units charged: never given to anyone else.
//
// Times: a request's `now` when given (replay, tests; the shared store gets it too), else the
// clock, by default the runtime's monotonic clock: a lease lives max_age of this process's time,
// and a jump of the wall clock must not stretch it (the shared store decides on its own clock).
// Metrics: spillway_lease_units{state="held|used|returned|lost"}, spillway_lease_calls_total
// {call="acquire|return"}, spillway_lease_local_decisions_total.
// Thread safety: every method from any thread. Ownership: owns the wrapped store; shares `clock`
// and `runtime`; owns its sweep task (scheduled by the constructor when sweep_interval > 0,
// cancelled by the destructor).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "spillway/clock.h"
#include "spillway/forwarding_store.h"
#include "spillway/lease.h"
#include "spillway/runtime.h"

namespace spillway {

struct LeaseStoreOptions {
  std::shared_ptr<const Clock> clock;  // nullptr: the runtime's monotonic clock
  // Runs the sweeps; nullptr: system_runtime().
  std::shared_ptr<Runtime> runtime;
  // How often a task on the runtime ends the leases whose time is over (gives back their units)
  // and forgets idle keys. 0: no task; the owner calls sweep().
  std::chrono::milliseconds sweep_interval{50};
  // How long a lease's reservation outlives the lease's own time in the shared store, for its
  // leftover to be given back. A return later than that finds nothing: its units stay charged.
  std::chrono::milliseconds return_grace{2000};
};

class LeaseStore final : public ForwardingStore {
 public:
  explicit LeaseStore(std::unique_ptr<Store> inner, LeaseStoreOptions options = {});
  // Gives every lease's leftover back (release_all, up to 1 s), then stops.
  ~LeaseStore() override;

  void decide(const StoreRequest& request, AllCallback done) override;
  // settle, ready, probe, wait_ready, status: the wrapped store's.
  void append_metrics(std::string& out) const override;
  // Forgets every remembered denial (a reset made elsewhere, a reload), then the inner store's;
  // leases keep their units.
  void clear_caches() override;

  // Ends every lease whose time is over at `now` (default: the clock) and gives its leftover
  // back; forgets keys idle for 10 max_age. The sweep task calls it.
  void sweep(std::optional<Micros> now = std::nullopt);
  // Ends every lease and gives every leftover back; waits up to `timeout` for the answers.
  void release_all(std::chrono::milliseconds timeout = std::chrono::seconds(1));

  // Units, since this store was made (held: now).
  struct Counts {
    std::int64_t held = 0;              // in leases now, not yet admitted
    std::int64_t used = 0;              // admitted from leases
    std::int64_t returned = 0;          // given back to the shared store
    std::int64_t lost = 0;              // left in ended leases and not given back (stranded)
    std::uint64_t acquire_calls = 0;    // lease requests sent to the shared store
    std::uint64_t return_calls = 0;     // settlements sent to give units back
    std::uint64_t local_decisions = 0;  // checks answered without the shared store
  };
  Counts counts() const;

 private:
  // The leases (64 shards of entries, each under its own mutex), the counters and the sweep
  // task: src/open_store/lease_store_impl.h. Made once, with the store.
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
