// Quota leases (docs/SPEC.md §2.3): a shared limit decided in the process, from blocks of units
// that were charged to the shared state (Redis) before any of them is admitted.
//
// A LeaseSpec says that a layer may be decided that way, and how: a lease's units are used within
// `max_age` of their charge (less for the window algorithms: a lease never outlives the window it
// was charged in), and one lease holds at most `max_share` of the limit. The lease machinery
// itself is the LeaseStore wrapper (spillway/lease_store.h); every other store ignores a
// KeyedLimit's lease and decides exactly.
//
// Plain values; the pure functions below are thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "spillway/decision.h"
#include "spillway/duration.h"
#include "spillway/error.h"
#include "spillway/limit.h"

namespace spillway {

inline constexpr Micros kDefaultLeaseMaxAge = 100'000;              // 100 ms
inline constexpr std::int64_t kDefaultLeaseMaxSharePermille = 100;  // 10 %

struct LeaseSpec {
  Micros max_age = kDefaultLeaseMaxAge;  // µs, 1 ms .. 1 h
  // The most one lease may hold, in thousandths of the limit (L; the burst B for the bucket
  // algorithms when it is smaller): 1 .. 1000.
  std::int64_t max_share_permille = kDefaultLeaseMaxSharePermille;
  friend bool operator==(const LeaseSpec&, const LeaseSpec&) = default;
};

// What is wrong with `spec`, if anything (kInvalidArgument naming "max_age" or "max_share").
std::optional<Error> lease_spec_problem(const LeaseSpec& spec);

// Why a leased layer cannot take a max_delay (Limit::with_max_delay): the one message for it.
std::string_view lease_refuses_delay();

// The most units one lease of `limit` may hold: max_share of L (of B when smaller), at least 1.
std::int64_t lease_cap(const Limit& limit, const LeaseSpec& spec);

// The units a new lease asks for: about max_age of the demand seen on the last lease
// (`used` units over `span` µs; span 0: no history), never less than `need` (the request that
// asks for it) and never more than the cap unless `need` is (a request is never split).
std::int64_t lease_size(const Limit& limit, const LeaseSpec& spec, std::int64_t need,
                        std::int64_t used, Micros span);

// How long, from the moment its charge was sent, a lease may be used, given the shared store's
// answer to that charge (`charged`: admitted). max_age, cut for fixed_window and sliding_window at
// the end of the window the charge counted in (read from charged.reset_after), so that every unit
// is admitted in the window it was charged in. At least 1 µs.
Micros lease_horizon(const Limit& limit, const LeaseSpec& spec, const Decision& charged);

}  // namespace spillway
