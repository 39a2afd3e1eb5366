// Durations and rates as people write them ("250ms", "1m", "60/min").
//
// Units: every duration is a whole number of microseconds (Micros). Parsing accepts whole
// numbers only, with a unit written right after the number: us, ms, s, m, h, d, or a word
// (sec, secs, second, seconds, min, mins, minute, minutes, hour, hours, day, days; the same
// words as a rate's period); it rejects zero, negatives, fractions, overflow and junk with an
// error that quotes the input. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway {

using Micros = std::int64_t;

inline constexpr Micros kMicrosPerMilli = 1'000;
inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerMinute = 60 * kMicrosPerSecond;
inline constexpr Micros kMicrosPerHour = 60 * kMicrosPerMinute;
inline constexpr Micros kMicrosPerDay = 24 * kMicrosPerHour;

// "250ms", "1s", "30s", "1m", "1h", "1d" (also "us"), "1min", "2hours", "90sec". Result is > 0.
Result<Micros> parse_duration(std::string_view text);

// A limit per period: "60/min" is {60, 1m}. The part after '/' is a unit word (ms, s, sec,
// second, m, min, minute, h, hour, d, day, plurals too) or a duration ("100/30s", "5/2hours").
struct Rate {
  std::int64_t limit;
  Micros period;
};
Result<Rate> parse_rate(std::string_view text);

// The shortest exact spelling of a duration in the largest unit that divides it: 60000000 -> "1m",
// 1500000 -> "1500ms". Round-trips through parse_duration.
std::string format_duration(Micros d);

// Whole units, rounded up: ceil_to_unit(1001, kMicrosPerMilli) == 2. d must be >= 0.
constexpr std::int64_t ceil_to_unit(Micros d, Micros unit) { return (d + unit - 1) / unit; }

}  // namespace spillway
