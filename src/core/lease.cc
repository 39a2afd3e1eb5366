#include "spillway/lease.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace spillway {

namespace {
constexpr Micros kMinLeaseMaxAge = 1'000;          // 1 ms
constexpr Micros kMaxLeaseMaxAge = 3'600'000'000;  // 1 h
}  // namespace

std::string_view lease_refuses_delay() {
  return "max_delay needs sync: exact (a lease decides from this process's share of the limit, "
         "which cannot tell when a request would fit across instances)";
}

std::optional<Error> lease_spec_problem(const LeaseSpec& spec) {
  if (spec.max_age < kMinLeaseMaxAge || spec.max_age > kMaxLeaseMaxAge) {
    return Error{
        Errc::kInvalidArgument,
        "lease max_age must be between 1ms and 1h (got " + std::to_string(spec.max_age) + " us)",
        "max_age"};
  }
  if (spec.max_share_permille < 1 || spec.max_share_permille > 1000) {
    return Error{Errc::kInvalidArgument,
                 "lease max_share must be between 0.1% and 100% (got " +
                     std::to_string(spec.max_share_permille) + " permille)",
                 "max_share"};
  }
  return std::nullopt;
}

std::int64_t lease_cap(const Limit& limit, const LeaseSpec& spec) {
  const std::int64_t whole =
      takes_burst(limit.algorithm()) ? std::min(limit.limit(), limit.burst()) : limit.limit();
  // whole < 2^52 and permille <= 1000: the product stays far below 2^63.
  return std::max<std::int64_t>(1, whole * spec.max_share_permille / 1000);
}

std::int64_t lease_size(const Limit& limit, const LeaseSpec& spec, std::int64_t need,
                        std::int64_t used, Micros span) {
  const std::int64_t cap = lease_cap(limit, spec);
  std::int64_t wanted = need;
  if (span > 0 && used > 0) {
    // used / span units per µs, over max_age (a size, not a decision: a double is exact enough),
    // capped before it is made an integer.
    const double demand = std::ceil(static_cast<double>(used) * static_cast<double>(spec.max_age) /
                                    static_cast<double>(span));
    wanted = demand >= static_cast<double>(cap) ? cap : static_cast<std::int64_t>(demand);
  } else if (span == 0 && used > 0) {
    wanted = cap;  // all of it used at once: as much as a lease may hold
  }
  return std::max(need, std::min(wanted, cap));
}

Micros lease_horizon(const Limit& limit, const LeaseSpec& spec, const Decision& charged) {
  Micros horizon = spec.max_age;
  switch (limit.algorithm()) {
    case Algorithm::kFixedWindow:
      // reset_after is the time left in the window the charge counted in.
      horizon = std::min(horizon, charged.reset_after);
      break;
    case Algorithm::kSlidingWindow:
      // With a charge in the current window, reset_after runs to the end of the next one.
      horizon = std::min(horizon, charged.reset_after - limit.period());
      break;
    default:
      break;
  }
  return std::max<Micros>(1, horizon);
}

}  // namespace spillway
