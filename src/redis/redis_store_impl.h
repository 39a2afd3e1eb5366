// RedisStore's state and its private steps (spillway/redis_store.h keeps only a pointer to it):
// the options, the key digest, the connection target (one node, a cluster's router, or the
// sentinels' primary), one batcher per algorithm, and the probe counters. Its methods are defined
// in redis_store.cc (deciding a check, probing, waiting), store_reservations.cc (reserve, settle,
// charge) and store_reset.cc (reset). Private to src/redis.
//
// Thread safety: as RedisStore (every method from any thread). Ownership: owns the target and the
// batchers; the destructor closes the batchers, then the target (whose destructor fails the calls
// in flight, whose callbacks still use the batchers).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/redis_store.h"
#include "src/redis/batcher.h"
#include "src/redis/cross_slot.h"
#include "src/redis/script_target.h"

namespace spillway {

class RedisStore::Impl {
 public:
  Impl(RedisStoreOptions options, KeyDigest digest, std::unique_ptr<redis::ScriptTarget> target);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // RedisStore's methods of the same names.
  void decide(const StoreRequest& request, AllCallback done);
  void settle(const Settlement& settlement, SettleCallback done);
  std::string storage_key(std::string_view key, const Limit& limit) const;
  bool ready() const;
  Result<void> probe();
  void append_metrics(std::string& out) const;
  Result<void> wait_ready(std::chrono::milliseconds timeout);
  RoutingCounters routing_counters() const;

 private:
  // Where a key's checks go: its hash slot on a cluster, 0 on one Redis (where any keys may
  // share a call).
  std::uint16_t slot_of(std::string_view redis_key) const;
  // Operation::kReset: the keys deleted, one script call per hash slot (store_reset.cc).
  void reset(const StoreRequest& request, AllCallback done);
  // Operation::kReserve: the check and its record in one step (store_reservations.cc).
  void reserve(const StoreRequest& request, AllCallback done);
  // Operation::kCharge: each slot's keys charged without a check, one call per slot.
  void charge(const StoreRequest& request, AllCallback done);
  // Each key of the request: its Redis key, slot and the all-or-nothing script's numbers.
  std::vector<redis::SlotKey> slot_keys(const StoreRequest& request) const;
  // One call of the all-or-nothing script over keys of one slot; with a record key, also writes
  // a reservation's record (record_args: its ttl, then the arguments after the layers' numbers).
  void all_or_nothing_call(const std::vector<redis::SlotKey>& keys, const std::string& now_arg,
                           std::string_view record_key, std::span<const std::string> record_args,
                           AllCallback done);

  RedisStoreOptions options_;
  KeyDigest digest_;
  std::unique_ptr<redis::ScriptTarget> target_;
  std::vector<std::unique_ptr<redis::Batcher>> batchers_;  // one per algorithm
  std::atomic<bool> probe_failed_{false};                  // the last probe() failed
  std::atomic<std::uint64_t> probes_{0};                   // probe() calls made
};

}  // namespace spillway
