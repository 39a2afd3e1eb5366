// An exact local cache of denials in front of a network store (Redis): a key that the backend
// denied for cost c with retry_after d is denied again, for any cost >= c, until d has passed,
// without a round trip. d is counted from the moment the denied call was sent, so the cache
// never outlasts the backend's own denial: the backend decided at or after that moment, only
// time turns a denial into an admission (a denied check changes no state, and other checks can
// only use more of the limit), so the cache never denies what the backend would admit. This is
// envoyproxy/ratelimit's LOCAL_CACHE_SIZE_IN_BYTES without its over-denial. (Redis Cluster's
// cross-slot reservations are the one exception the backend shares: a denial caused by another
// request's reservation that is later refunded.)
//
// A denial of cost above the limit (retry_after kNever) is kept for any cost >= c until evicted.
// Peeks (cost 0) and checks given their own `now` on another clock still go to the backend with
// the same rule (the cache compares against `now` when given).
//
// Answers from the cache have Decision::local set. In an all-or-nothing check denied by the cache,
// the keys it did not consult report allowed, remaining = their limit, local set: their state is
// unknown, and they are charged nothing.
//
// Memory: at most `max_entries` keys (least recently used evicted first). Metrics:
// spillway_over_limit_cache_hits_total, _entries. clear_caches() empties it.
// Time: d is counted on `clock`, by default the monotonic clock, so that a jump of the wall clock
// never stretches a denial past the backend's (on Redis the backend's time is Redis' own).
// Thread safety: every method from any thread. Ownership: owns the wrapped store; shares `clock`
// (nullptr: the monotonic clock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "spillway/clock.h"
#include "spillway/forwarding_store.h"

namespace spillway {

class OverLimitCache final : public ForwardingStore {
 public:
  OverLimitCache(std::unique_ptr<Store> inner, std::size_t max_entries,
                 std::shared_ptr<const Clock> clock = nullptr);
  ~OverLimitCache() override;

  // A request that some key's cached denial answers is answered at once, without the backend.
  void decide(const StoreRequest& request, AllCallback done) override;
  // settle: passed on (a debt may make a key deny: the cache learns it from later checks).
  void append_metrics(std::string& out) const override;
  void clear_caches() override;

  // Checks denied from the cache (without the backend) since construction; denials held now.
  std::uint64_t hits() const;
  std::size_t entries() const;

 private:
  // The table of denials (an LRU list and its index, under one mutex), the clock and the hit
  // count: src/open_store/over_limit_cache.cc.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
