// GCRA (docs/SPEC.md §2): theoretical arrival time tat, starting at now; with T = P/L, admits iff
// max(tat, now) + c*T - now <= B*T, then tat = max(tat, now) + c*T. With a max_delay D
// (shaping, docs/SPEC.md §2.2), a request that overshoots B*T by w <= D is admitted too, charged
// the same way now, with Decision::delay = w; a denial's retry_after is when it would be admitted
// with the longest delay.
//
// tat is exact: tat = tat_us + tat_rem / limit_units() µs, 0 <= tat_rem < limit_units(), and
// T = period_units() / limit_units() µs (see Limit). Same decisions as token_bucket for the same
// (L, P, B) on every trace.
#pragma once

#include <cstdint>

#include "spillway/decision.h"
#include "spillway/limit.h"
#include "src/core/algorithm_state.h"
#include "src/core/busy_stretch.h"
#include "src/core/charge_mark.h"
#include "src/core/token_bucket.h"  // kNoTime

namespace spillway::core {

struct GcraState {
  Micros tat_us = 0;
  std::int64_t tat_rem = 0;
  Micros last = kNoTime;  // time of the last admission; kNoTime means idle
  // For refunds after other charges (src/core/busy_stretch.h): the start of the busy stretch
  // (µs) and the least debt (scaled) a charge found since.
  Micros since = 0;
  std::int64_t low = kNoLow;
};

GcraState state_of(AlgorithmTag<Algorithm::kGcra>);  // the memory store's table holds GcraStates

Decision decide(GcraState& state, const Limit& limit, Micros now, std::int64_t cost);

Micros idle_at(const GcraState& state, const Limit& limit);

// Usage-based limits (docs/SPEC.md §2.6). mark(): the mark of the charge decide() just made: its
// time and the key's debt (tat - now, scaled) right after it. settle(): `delta` > 0 moves tat on
// by delta*T without a check (debt: tat - now may pass B*T, by at most kDebtLimits*B*T);
// `delta` < 0 moves it back by up to -delta*T, never below now: exactly that when nothing touched
// the key since the mark, else no more than src/core/busy_stretch.h allows. Returns the units
// charged or given back (whole units: a part of one given back moves tat but is not counted).
ChargeMark mark(const GcraState& state, const Limit& limit);
std::int64_t settle(GcraState& state, const Limit& limit, Micros now, std::int64_t delta,
                    const ChargeMark& mark);

}  // namespace spillway::core
