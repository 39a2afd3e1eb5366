// What a reservation keeps of one key's charge so that it can be settled later (usage-based
// limits, docs/SPEC.md §2.6): the charge is made by decide(), the mark is read from the state
// right after it (mark() in each algorithm's header), and settle() uses it to give back part of
// the charge without ever leaving the key more room than had the charge been smaller from the
// start. Plain value.
#pragma once

#include <cstdint>
#include <limits>

#include "spillway/duration.h"

namespace spillway::core {

struct ChargeMark {
  Micros at = 0;          // when the charge was recorded (µs): the state's time right after it
  std::int64_t debt = 0;  // the bucket algorithms: how far from full the key was right after the
                          // charge, in the algorithm's scaled units; 0 for the window algorithms
  // The bucket algorithms: the start of the key's busy stretch right after the charge
  // (src/core/busy_stretch.h); the default matches no stretch.
  Micros since = std::numeric_limits<Micros>::min();
};

// A key may owe at most one full limit beyond empty: a charge without a check (debt) stops
// there, so a key waits at most one period more than a full key, and every number stays below
// the bounds Limit keeps (the Lua mirror stays exact).
inline constexpr std::int64_t kDebtLimits = 1;

}  // namespace spillway::core
