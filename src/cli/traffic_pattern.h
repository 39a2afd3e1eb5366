// Generated request traces for `spillway simulate` (docs/SPEC.md §4): offered traffic of a named
// shape, the same trace for the same options and seed (a 64-bit Mersenne Twister with transforms
// of our own, not std:: distributions, whose output differs between standard libraries).
//
// Arrivals are a Poisson process whose rate follows the pattern (thinning against its peak):
//   steady        `rate` per second all along, keys uniform
//   burst         spikes: in every 10 s, 1 s at 5 × rate, the other 9 s at rate / 2
//   ramp          from 0 to 2 × rate, linearly over the duration
//   diurnal       one compressed day: rate × (1 − 0.8 cos(2π t / duration))
//   attack        steady traffic of `keys` normal keys, plus the key "attacker" at 20 times the
//                 limit (limit / period per second × 20)
//   many-tenants  steady, keys drawn by Zipf's law (exponent 1.1): a few tenants send most
// Keys are "key-0" … "key-<keys−1>". Times are µs from 0, ascending; every cost is 1.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/duration.h"
#include "spillway/error.h"
#include "src/cli/replay.h"

namespace spillway::cli {

struct PatternOptions {
  std::string name;   // one of pattern_names()
  double rate = 100;  // requests per second offered (on average); simulate: see default_rate
  Micros duration = 60 * kMicrosPerSecond;  // > 0
  int keys = 10;                            // ≥ 1
  std::uint64_t seed = 1;
  double limit_per_second = 1;  // the limit being simulated, for `attack`
};

std::span<const std::string_view> pattern_names();

// The offered rate (requests per second, all keys together) when none is given: relative to the
// limit, so that a pattern meets it whatever its size. Each key offers twice the limit on average
// (2 × limit_per_second × keys); for `attack` the normal keys offer half of it
// (limit_per_second × keys / 2), so that only the attacker goes over.
double default_rate(const PatternOptions& options);

// The largest trace generate() makes; more is an error naming --rate and --duration.
inline constexpr std::size_t kMaxGeneratedRequests = 5'000'000;

// Errors: an unknown name (listing the names), or a trace that would pass kMaxGeneratedRequests.
Result<std::vector<TraceLine>> generate_pattern(const PatternOptions& options);

}  // namespace spillway::cli
