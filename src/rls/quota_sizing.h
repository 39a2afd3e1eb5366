// The sizes of RLQS token-bucket assignments (src/rls/quota_engine.h, docs/SPEC.md §9.7): the
// assignment's time to live from the report interval seen, what an assignment costs the shared key
// (QuotaCost: Envoy's bucket starts full and refills until its expiry), what a limit allows one
// Envoy per fill interval (QuotaSizing), and an Envoy's max-min fair share of the limit by the
// demands (src/rls/quota_demand.h measures them). Times are Micros (every ttl whole seconds, as
// Envoy reads only seconds); tokens and costs are the limit's units. Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "spillway/clock.h"
#include "spillway/limit.h"
#include "src/rls/quota_engine.h"

namespace spillway::rls {

// `m` rounded up to whole seconds, within [1 s, kMaxQuotaTtl]: Envoy reads only `.seconds()`.
Micros whole_seconds(Micros m);

// The assignment's time to live: the longest time seen between two reports plus half of it (at
// least 600 ms, more than two trips of kQuotaGrace), in whole seconds, so it outlives the next
// report whatever Envoy's reporting_interval; kFirstQuotaTtl before any is seen.
Micros ttl_for(Micros interval);

// What an assignment of `tokens` per fill interval costs: Envoy's bucket holds `size` =
// tokens × ttl / fill (what one ttl brings, at least 1, at most tokens) and starts full; it
// refills tokens/fill per second for `span` (until the expiry Envoy arms).
struct QuotaCost {
  Micros ttl = 0;
  Micros fill = 0;
  Micros span = 0;
  std::uint32_t size(std::uint32_t tokens) const {
    const double s = std::ceil(static_cast<double>(tokens) * static_cast<double>(ttl) /
                               static_cast<double>(fill));
    return static_cast<std::uint32_t>(std::clamp(s, 1.0, static_cast<double>(tokens)));
  }
  static std::int64_t refill(std::uint32_t tokens, Micros fill, Micros span) {
    if (span <= 0) return 0;
    return static_cast<std::int64_t>(std::ceil(
        static_cast<double>(tokens) * static_cast<double>(span) / static_cast<double>(fill)));
  }
  std::int64_t of_new(std::uint32_t tokens) const {
    return std::int64_t{size(tokens)} + refill(tokens, fill, span);
  }
  // The largest tokens whose new bucket `left` pays for (0: none).
  std::int64_t fit(std::int64_t left) const {
    if (left < 2) return 0;
    const double per = static_cast<double>(std::min(ttl, fill) + span) / static_cast<double>(fill);
    auto t = static_cast<std::int64_t>(std::floor(static_cast<double>(left - 1) / per));
    t = std::clamp<std::int64_t>(t, 0, std::numeric_limits<std::uint32_t>::max());
    while (t > 0 && of_new(static_cast<std::uint32_t>(t)) > left) --t;
    return t;
  }
};

// The ttl before any report interval is seen: kFirstQuotaTtl, halved (to 2 s at least) while
// a bucket of one token per F would cost more than a sixteenth of the largest charge the limit
// takes (a short period: its refill over a long ttl is charged in advance, and the first bucket
// is replaced at the next report, where a bucket algorithm gives nothing back).
Micros first_ttl(const Limit& limit, Micros fill);

// What a limit allows one Envoy per fill interval F (= the limit's period in whole seconds):
// `rate`, the limit's rate over F; `most`, at most that and what keeps a new bucket's cost within
// the largest charge the limit can take (L, or B); `start`, for an Envoy whose demand is not known
// yet, what a sixteenth of that largest charge pays for (at least 1, at most `most`).
struct QuotaSizing {
  double rate = 1;
  double most = 1;
  double start = 1;
};

QuotaSizing sizing_for(const Limit& limit, Micros ttl, Micros fill);

// What the member whose demand is demands[0] is given of `capacity`: its max-min fair share by
// the demands (a demand of -1, not known, asks for all: each member asking less than an even
// split gets what it asks, the rest is split evenly), plus an even part of what the shares
// leave, up to 1.25 × its demand (headroom for growth; `unknown`: what it gets while its demand
// is not known).
double max_min_share(double capacity, const std::vector<std::int64_t>& demands, double unknown);

}  // namespace spillway::rls
