// The answer to one check. Units: microseconds. Plain value type.
#pragma once

#include <cstdint>

#include "spillway/duration.h"

namespace spillway {

// retry_after when the request can never be admitted (cost above the limit or burst).
inline constexpr Micros kNever = -1;

// What a decision says (Decision::verdict()): admit now; admit after `delay` (shaping: the
// request is charged now and should proceed once the delay has passed); deny, with retry_after.
enum class Verdict : std::uint8_t { kAdmit, kAdmitAfter, kDeny };

struct Decision {
  bool allowed = false;
  std::int64_t limit = 0;      // L, requests (cost units) per period
  std::int64_t remaining = 0;  // after this decision, never below 0
  Micros retry_after = 0;      // 0 when allowed; smallest wait until admitted; kNever if never
  Micros reset_after = 0;      // time until the key is back to its idle state
  // Answered by a local cache without asking the backend (OverLimitCache): a denial it already
  // knew, or, next to it in an all-or-nothing check, a key it did not consult.
  bool local = false;
  // Admitted, but to proceed only after this wait, µs (> 0: the verdict kAdmitAfter). Only a
  // limit with a max_delay (Limit::with_max_delay) delays; the request was charged already.
  Micros delay = 0;

  constexpr Verdict verdict() const {
    if (!allowed) return Verdict::kDeny;
    return delay > 0 ? Verdict::kAdmitAfter : Verdict::kAdmit;
  }

  friend bool operator==(const Decision&, const Decision&) = default;
};

}  // namespace spillway
