#include "spillway/limit.h"

#include <numeric>

#include "src/core/charge_mark.h"

namespace spillway {
Result<Limit> Limit::make(Algorithm algorithm, std::int64_t limit, Micros period,
                          std::optional<std::int64_t> burst, Micros max_delay) {
  if (limit < 1) return invalid_argument("limit must be at least 1, got " + std::to_string(limit));
  if (period < 1) {
    return invalid_argument("period must be at least 1us, got " + std::to_string(period) + "us");
  }
  if (burst && !takes_burst(algorithm)) {
    return invalid_argument(burst_not_taken_message(algorithm));
  }
  if (burst && *burst < 1) {
    return invalid_argument("burst must be at least 1, got " + std::to_string(*burst));
  }
  if (limit >= kMaxExact || period >= kMaxExact) {
    return invalid_argument("limit and period must each be below 2^52");
  }
  Limit out;
  out.algorithm_ = algorithm;
  out.limit_ = limit;
  out.period_ = period;
  out.burst_ = burst.value_or(limit);
  std::int64_t g = std::gcd(limit, period);
  out.limit_units_ = limit / g;
  out.period_units_ = period / g;
  // Bounds that keep every intermediate value of the math below 2^53 (see the header).
  if (algorithm == Algorithm::kSlidingWindow && limit > kMaxExact / period) {
    return invalid_argument("limit x period (µs) must be below 2^52 for sliding_window; got " +
                            out.describe() + " (use a shorter period or gcra)");
  }
  if (takes_burst(algorithm) && out.burst_ > kMaxExact / out.period_units_) {
    return invalid_argument("burst x period / gcd(limit, period) must be below 2^52; got " +
                            out.describe());
  }
  return out.with_max_delay(max_delay);
}

Result<Limit> Limit::concurrency(std::int64_t in_flight, Micros hold_ttl) {
  if (in_flight < 1 || in_flight >= kMaxExact) {
    return invalid_argument("a concurrency limit must be from 1 to 2^52 requests in flight, got " +
                            std::to_string(in_flight));
  }
  constexpr Micros kShortest = 1000;
  constexpr Micros kLongest = Micros{24} * 3600 * 1000 * 1000;
  if (hold_ttl < kShortest || hold_ttl > kLongest) {
    return invalid_argument(
        "hold_ttl must be from 1ms to 1d (a hold not released is freed then), "
        "got " +
        format_duration(hold_ttl));
  }
  Result<Limit> made = make(Algorithm::kSlidingLog, in_flight, hold_ttl);
  if (made) made->kind_ = LimitKind::kConcurrency;
  return made;
}

Result<Limit> Limit::with_max_delay(Micros max_delay) const {
  if (max_delay < 0) {
    return invalid_argument("max_delay must not be negative, got " + std::to_string(max_delay) +
                            "us");
  }
  if (max_delay > 0 && is_concurrency()) {
    return invalid_argument(
        "max_delay applies to rates, not a concurrency limit (a slot is freed "
        "by a release, at no time known in advance)");
  }
  if (max_delay > 0 && !takes_max_delay(algorithm_)) {
    return invalid_argument(max_delay_not_taken_message(algorithm_));
  }
  // The scaled wait joins the debt bound (1 + kDebtLimits) * B*T: the sum must stay below 2^53,
  // where the Lua mirror's doubles are exact.
  // (Only a bucket algorithm gets here with a delay: make() keeps its B * period_units below 2^52.)
  if (max_delay > 0) {
    const std::int64_t room = 2 * kMaxExact - 1 - (1 + core::kDebtLimits) * burst_ * period_units_;
    if (max_delay > room / limit_units_) {
      return invalid_argument("max_delay " + format_duration(max_delay) + " is too long for " +
                              describe() + ": at most " + format_duration(room / limit_units_) +
                              " keeps the arithmetic exact");
    }
  }
  Limit out = *this;
  out.max_delay_ = max_delay;
  return out;
}

Result<Limit> Limit::with_reserved(std::int64_t reserved) const {
  if (reserved < 0 || reserved > capacity()) {
    return invalid_argument("reserved must be between 0 and the capacity " +
                            std::to_string(capacity()) + " of " + describe() + ", got " +
                            std::to_string(reserved));
  }
  Limit out = *this;
  out.reserved_ = reserved;
  return out;
}

std::string Limit::describe() const {
  if (is_concurrency()) {
    std::string text =
        "concurrency " + std::to_string(limit_) + " hold_ttl " + format_duration(period_);
    if (reserved_ > 0) text += " reserved " + std::to_string(reserved_);
    return text;
  }
  std::string text = std::string(algorithm_name(algorithm_)) + " " + std::to_string(limit_) + "/" +
                     format_duration(period_);
  if (takes_burst(algorithm_)) text += " burst " + std::to_string(burst_);
  if (max_delay_ > 0) text += " max_delay " + format_duration(max_delay_);
  if (reserved_ > 0) text += " reserved " + std::to_string(reserved_);
  return text;
}

}  // namespace spillway
