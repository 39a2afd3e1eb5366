// A denial a shared store gave, remembered so that the same request is answered again without a
// round trip: the one rule that the over-limit cache (src/open_store/over_limit_cache.cc) and the
// lease store's denied leases (src/open_store/lease_take.cc) both keep.
//
// A denial of cost c answers every request of cost >= c on the same (limit, key) while time is
// before `until` (sent + the denial's retry_after), or until forgotten when the denial said never
// (a cost above the limit). A denial with no wait (retry_after <= 0) is not remembered: the next
// request may pass. Times: µs on the store's time base. A value; no thread safety of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "spillway/decision.h"
#include "spillway/duration.h"

namespace spillway {

struct RememberedDenial {
  std::int64_t min_cost = 0;  // denied for this cost; so for any cost at least this
  bool forever = false;       // retry_after was kNever
  Micros until = 0;           // otherwise: denied while time < until

  // The denial to remember of `decision`, sent at `sent` for `cost`; nullopt when there is none
  // (admitted, cost <= 0, or no wait).
  static std::optional<RememberedDenial> of(const Decision& decision, std::int64_t cost,
                                            Micros sent) {
    if (decision.allowed || cost <= 0) return std::nullopt;
    if (decision.retry_after == kNever) return RememberedDenial{.min_cost = cost, .forever = true};
    if (decision.retry_after <= 0) return std::nullopt;
    return RememberedDenial{.min_cost = cost, .until = sent + decision.retry_after};
  }

  bool expired(Micros now) const { return !forever && now >= until; }
  // Whether it answers a request of `cost` at `now`.
  bool answers(std::int64_t cost, Micros now) const { return cost >= min_cost && !expired(now); }
  // The wait left at `now` (kNever when forever).
  Micros wait(Micros now) const { return forever ? kNever : std::max<Micros>(0, until - now); }
};

}  // namespace spillway
