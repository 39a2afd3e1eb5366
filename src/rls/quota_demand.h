// An RLQS Envoy's demand (docs/SPEC.md §9.7): the requests its reports saw (allowed + denied)
// per fill interval F, measured over at least kDemandWindow. Reports closer together than that
// add up first: a bucket that sees a few requests per report (Envoy may report every 250 ms)
// would otherwise be resized on counting noise, and every new bucket costs the shared key a full
// one. The first report with a time measures at once (a bucket is sized from its first report);
// later ones keep the last measure until the reports since cover the window. Times are Micros.
// A plain value: one per bucket of a stream, used by that stream's calls in sequence.
#pragma once

#include <cstdint>

#include "spillway/clock.h"

namespace spillway::rls {

inline constexpr Micros kDemandWindow = 1'000'000;  // 1 s

class DemandWindow {
 public:
  // Adds one report of `requests` covering `gap` (the time since the last report; 0: a bucket
  // Envoy just created) and returns the demand per `fill`: -1 while not known, else at least 1.
  std::int64_t add(std::uint64_t requests, Micros gap, Micros fill);

 private:
  std::uint64_t seen_ = 0;  // requests reported since the last measure
  Micros gap_ = 0;          // the time those reports cover
  std::int64_t last_ = -1;  // the last measure, per F
};

}  // namespace spillway::rls
