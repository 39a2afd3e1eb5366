// The in-process store: the embedded default, no server needed.
//
// Thread safety: all methods may be called concurrently. Keys are spread over independently
// locked shards (no global lock); a check holds exactly one shard lock for the time of the math.
// Ownership: shares options.clock and options.runtime; owns its sweep task, which the destructor
// cancels (waiting for a sweep under way).
//
// Memory: a key is tracked only while its limiter is not idle. Idle keys are dropped by sweep(),
// which runs on its own as shards grow and, with options.sweep_interval > 0, as a task on the
// runtime, so memory returns to its baseline once traffic stops.
//
// Capacity: at most options.max_keys keys are tracked. When a shard is full, a check on a new key
// first sweeps that shard; if it is still full the check returns Errc::kStoreFull (the caller
// decides to fail open or closed). Keys already tracked keep being decided exactly, so the store
// never admits above its limit a key that it tracks.
//
// Reservations (Operation::kReserve): at most options.max_reservations OPEN reservations (made,
// neither settled nor swept past their ttl). At the cap a reserve first drops the reservations
// already past their ttl (each shard keeps its open ones ordered by expiry, so this pops only
// expired entries: amortised O(1), never a scan), and if none had, it returns Errc::kStoreFull at
// once, charging nothing. A settled reservation leaves only a tombstone (a 64-bit hash of its id
// and its expiry, ~60 bytes) until its ttl, so that a second settlement is kConflict; at most
// options.max_settled_reservations tombstones, the oldest settled forgotten first (a second
// settlement of a forgotten one is then kNotFound instead of kConflict: nothing is charged twice
// either way).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "spillway/clock.h"
#include "spillway/runtime.h"
#include "spillway/store.h"

namespace spillway {

struct MemoryStoreOptions {
  std::size_t shards = 64;                   // rounded up to a power of two
  std::size_t max_keys = 10'000'000;         // across all algorithms and shards
  std::size_t max_reservations = 1'000'000;  // open at once (made, neither settled nor expired)
  std::size_t max_settled_reservations = 1'000'000;  // settled ids remembered until their ttl
  std::shared_ptr<const Clock> clock;  // default: the runtime's wall clock, else SystemClock
  std::chrono::milliseconds sweep_interval{0};  // background sweep period; 0 = none
  std::shared_ptr<Runtime> runtime;             // runs the sweeps; default: system_runtime()
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(MemoryStoreOptions options = {});
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  // Answers before it returns (through complete_inline).
  void decide(const StoreRequest& request, AllCallback done) override;

  // The synchronous forms, answered in place: what Store's forms answer through decide() (the
  // same validation, the same tables), without building a callback and a list for one key. Per
  // check that is ~35 ns instead of ~80 (docs/benchmarks.md), through a Store& too.
  Result<Decision> check(std::string_view key, const Limit& limit, std::int64_t cost = 1,
                         std::optional<Micros> now = std::nullopt) override;
  Result<Decisions> check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                              std::optional<Micros> now = std::nullopt) override;

  // Reservations (Operation::kReserve) are kept in this process, until their ttl; settled in
  // place, answered before it returns.
  void settle(const Settlement& settlement, SettleCallback done) override;

  bool decides_inline() const override { return true; }

  // Reservations open (what counts against max_reservations) and expired (Prometheus lines),
  // once one was made.
  void append_metrics(std::string& out) const override;

  // Drops every key that is idle at `now` and returns how many were dropped (and the
  // reservations that expired by then).
  std::size_t sweep(Micros now);
  std::size_t sweep();  // at the clock's now

  // Keys tracked now, across all algorithms.
  std::size_t size() const;

 private:
  // The clock, the tables (one sharded table per algorithm), the reservations and the sweep task
  // (cancelled before the tables go away): src/memory/memory_store.cc.
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
