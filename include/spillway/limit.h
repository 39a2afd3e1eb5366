// A validated limiter definition: algorithm, limit L per period P, burst B.
//
// A Limit can only be built by Limit::make, which rejects what the algorithms cannot decide
// exactly. All arithmetic in spillway is exact integer arithmetic: T = P/L is kept as the
// fraction period_units()/limit_units() (P and L divided by their gcd), never rounded. Every
// intermediate value is kept below kMaxExact (2^52), which also keeps the Redis Lua mirror
// (double precision numbers) exact. Immutable; safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/algorithm.h"
#include "spillway/duration.h"
#include "spillway/error.h"

namespace spillway {

inline constexpr std::int64_t kMaxExact = std::int64_t{1} << 52;

// The latest `now` spillway accepts (about year 2112 in µs since the Unix epoch).
inline constexpr Micros kMaxNow = kMaxExact;

// What a limit counts.
//   kRate         L cost units per period P (Limit::make).
//   kConcurrency  at most N requests in flight (Limit::concurrency): an admitted request holds a
//                 slot until it is released (a reservation settled: docs/SPEC.md §2.5) or until
//                 its hold expires, hold_ttl after it was taken. Its state and math are the
//                 sliding log's (src/core/sliding_log.h): each hold is an entry that leaves the
//                 window when it expires, and a release takes its entry out early. So
//                 algorithm() is kSlidingLog, limit() is N and period() is the hold's lifetime.
enum class LimitKind : std::uint8_t { kRate, kConcurrency };

class Limit {
 public:
  // A rate. burst defaults to limit and is only accepted for token_bucket and gcra; so is a
  // max_delay other than 0 (with_max_delay).
  static Result<Limit> make(Algorithm algorithm, std::int64_t limit, Micros period,
                            std::optional<std::int64_t> burst = std::nullopt, Micros max_delay = 0);

  // At most `in_flight` requests held at once per key, each hold freed by its release or
  // `hold_ttl` µs after it was taken (LimitKind::kConcurrency). 1 <= in_flight < 2^52,
  // 1ms <= hold_ttl <= 1 day. A request holds one slot (a policy charges it 1, whatever its
  // cost). Only a reservation whose layer is a hold (ReservedLayer::hold) can be released; a plain
  // check (Store::check) takes a slot that only its hold_ttl frees: a rate of N per hold_ttl.
  static Result<Limit> concurrency(std::int64_t in_flight, Micros hold_ttl);

  // A copy that admits, after a wait of at most `max_delay` µs, a request it would deny now
  // (shaping, docs/SPEC.md §2.2): the request is charged now and its Decision carries the wait
  // (Decision::delay). 0 gives back a limit that never delays. Only token_bucket and gcra
  // (takes_max_delay); max_delay * limit_units() must stay below 2^52.
  Result<Limit> with_max_delay(Micros max_delay) const;

  // A copy whose admissions leave `reserved` cost units of its capacity to requests of a higher
  // priority (load shedding, docs/SPEC.md §2.4): a request is admitted only if it fits within
  // admit_capacity() = capacity() - reserved, while what it is charged, and the key's state, are
  // the limit's own, so every priority counts against one state. 0 <= reserved <= capacity();
  // a peek is decided the same way (its `remaining` is what this priority may still use).
  Result<Limit> with_reserved(std::int64_t reserved) const;

  LimitKind kind() const { return kind_; }
  bool is_concurrency() const { return kind_ == LimitKind::kConcurrency; }
  Algorithm algorithm() const { return algorithm_; }
  std::int64_t limit() const { return limit_; }
  Micros period() const { return period_; }
  std::int64_t burst() const { return burst_; }
  // The longest wait a request may be admitted with (µs); 0: a request that does not fit now is
  // denied.
  Micros max_delay() const { return max_delay_; }
  // The capacity kept for higher priorities, and what is left to admit into (cost units).
  std::int64_t reserved() const { return reserved_; }
  std::int64_t admit_capacity() const { return capacity() - reserved_; }
  // The most cost units an idle key admits back to back, which is what a decision's `remaining`
  // counts down from: B for token_bucket and gcra, L for the windows. The limit that rate limit
  // headers pairing a limit with a remaining report (X-RateLimit-Limit on HTTP, RateLimit-Limit
  // or X-RateLimit-Limit on Envoy's rate limit service), so that "limit - remaining" is what
  // was used.
  std::int64_t capacity() const { return takes_burst(algorithm_) ? burst_ : limit_; }

  // L / gcd(L, P) and P / gcd(L, P): the emission interval T is period_units / limit_units µs.
  std::int64_t limit_units() const { return limit_units_; }
  std::int64_t period_units() const { return period_units_; }

  // "gcra 60/1m burst 60" ("... max_delay 500ms" when it delays, "... reserved 12" when it keeps
  // capacity for higher priorities; "concurrency 20 hold_ttl 1m" for a concurrency limit), for
  // logs and errors.
  std::string describe() const;

  friend bool operator==(const Limit&, const Limit&) = default;

 private:
  Limit() = default;

  Algorithm algorithm_ = Algorithm::kGcra;
  std::int64_t limit_ = 1;
  Micros period_ = 1;
  std::int64_t burst_ = 1;
  std::int64_t limit_units_ = 1;
  std::int64_t period_units_ = 1;
  Micros max_delay_ = 0;
  std::int64_t reserved_ = 0;
  LimitKind kind_ = LimitKind::kRate;
};

}  // namespace spillway
