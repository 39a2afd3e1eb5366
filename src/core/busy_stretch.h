// What a bucket (gcra, token_bucket) keeps so that a reservation gives back its unused part even
// after other charges came in between (docs/SPEC.md §2.1): the start of the key's current busy
// stretch (`since`, µs: the last charge that found the key idle) and `low`, the least debt any
// charge since then found the key at (scaled as the algorithm's debt: GCRA's (tat - now) or the
// bucket's shortfall; kNoLow: no charge since the stretch began).
//
// Why that bounds a refund. Take the key and a model charged r units less at the mark, then both
// the same charges. Each charge is x -> max(x, t) + c*T: it keeps the gap between the two tats
// while the model's tat is at or past t, and shrinks it to at most (x - t) otherwise, where x - t
// is the key's debt the charge found. A refund of d lowers the key and shrinks the gap by d. So
// the gap, the most the key may give back, is at most min(r*T, every debt a charge since the mark
// found, less every refund since) -- and `low` is that minimum over a longer span (since the
// stretch began, which is no later than the mark), so it never gives back too much. The mark
// keeps the stretch it was made in (ChargeMark::since): another stretch now means the key was
// idle in between (the model too: nothing to give), or its state was dropped and made anew (a
// sweep, an expiry, a reset) and its history since the mark is unknown: nothing is given either.
//
// Plain functions on plain values; the Lua mirrors (lua/gcra.lua, lua/token_bucket.lua) repeat
// them inline, line for line.
#pragma once

#include <algorithm>
#include <cstdint>

#include "spillway/duration.h"
#include "src/core/charge_mark.h"

namespace spillway::core {

inline constexpr std::int64_t kNoLow = -1;

// A charge at `at` (the key's time: max(now, last)) that found the key `debt_before` from idle;
// `last` is the key's previous charge (kNoTime for a fresh key). A charge that finds the key idle
// starts a new stretch; if another charge came at this same µs, a mark of it would look as if
// made inside the new stretch, so that stretch starts with nothing to give back (low 0).
inline void note_charge(Micros& since, std::int64_t& low, Micros last, Micros at,
                        std::int64_t debt_before) {
  if (debt_before <= 0) {
    since = at;
    low = last == at ? 0 : kNoLow;
  } else {
    low = low == kNoLow ? debt_before : std::min(low, debt_before);
  }
}

// A refund that lowered the key by `moved` (scaled): every open mark's gap shrinks by as much.
inline void note_refund(std::int64_t& low, std::int64_t moved) {
  if (low != kNoLow) low = std::max<std::int64_t>(0, low - moved);
}

// The most (scaled) a key touched since `mark` may give back of `wanted`: nothing unless the key
// is in the stretch the mark was made in (and, defensively, a charge was seen in it).
inline std::int64_t touched_room(Micros since, std::int64_t low, const ChargeMark& mark,
                                 std::int64_t wanted) {
  if (mark.since != since || low == kNoLow) return 0;
  return std::min(wanted, low);
}

}  // namespace spillway::core
