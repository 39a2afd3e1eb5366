#include "spillway/duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>

#include "src/core/text.h"

namespace spillway {
namespace {

struct Unit {
  std::string_view name;
  Micros micros;
};

// The shortest spelling of each unit: what format_duration writes.
constexpr std::array kDurationUnits{
    Unit{"us", 1},
    Unit{"ms", kMicrosPerMilli},
    Unit{"s", kMicrosPerSecond},
    Unit{"m", kMicrosPerMinute},
    Unit{"h", kMicrosPerHour},
    Unit{"d", kMicrosPerDay},
};

// Every unit word, after a duration's number ("250ms", "2hours") and after a rate's '/' ("60/min"):
// one list, so what one accepts the other does.
constexpr std::array kUnitWords{
    Unit{"us", 1},
    Unit{"ms", kMicrosPerMilli},
    Unit{"s", kMicrosPerSecond},
    Unit{"sec", kMicrosPerSecond},
    Unit{"secs", kMicrosPerSecond},
    Unit{"second", kMicrosPerSecond},
    Unit{"seconds", kMicrosPerSecond},
    Unit{"m", kMicrosPerMinute},
    Unit{"min", kMicrosPerMinute},
    Unit{"mins", kMicrosPerMinute},
    Unit{"minute", kMicrosPerMinute},
    Unit{"minutes", kMicrosPerMinute},
    Unit{"h", kMicrosPerHour},
    Unit{"hour", kMicrosPerHour},
    Unit{"hours", kMicrosPerHour},
    Unit{"d", kMicrosPerDay},
    Unit{"day", kMicrosPerDay},
    Unit{"days", kMicrosPerDay},
};

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.append(1, '"').append(text).append(1, '"');
  return out;
}

// Parses the leading decimal digits of `text` into `value`; returns how many chars were used,
// 0 if none, or -1 on overflow.
int parse_count(std::string_view text, std::int64_t& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return -1;
  if (ec != std::errc{} || end == text.data()) return 0;
  return static_cast<int>(end - text.data());
}

}  // namespace

Result<Micros> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  std::int64_t count = 0;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    return invalid_argument("duration " + quoted(text) +
                            " must be a positive whole number with a unit");
  }
  int used = parse_count(s, count);
  if (used < 0) return invalid_argument("duration " + quoted(text) + " is too large");
  if (used == 0) {
    return invalid_argument("duration " + quoted(text) +
                            " must start with a whole number (e.g. 250ms, 1s, 1m, 1h, 1d)");
  }
  std::string_view suffix = s.substr(static_cast<std::size_t>(used));
  for (const Unit& unit : kUnitWords) {
    if (suffix != unit.name) continue;
    if (count == 0) return invalid_argument("duration " + quoted(text) + " must be greater than 0");
    if (count > std::numeric_limits<Micros>::max() / unit.micros) {
      return invalid_argument("duration " + quoted(text) + " is too large");
    }
    return count * unit.micros;
  }
  return invalid_argument("duration " + quoted(text) +
                          " has no valid unit (use us, ms, s, m, h, d, or sec, min, hour, "
                          "day and their plurals)");
}

Result<Rate> parse_rate(std::string_view text) {
  std::string_view s = trim(text);
  std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    return invalid_argument("rate " + quoted(text) + " must look like 60/min or 10/30s");
  }
  std::string_view count_text = trim(s.substr(0, slash));
  std::string_view per = trim(s.substr(slash + 1));
  std::int64_t limit = 0;
  int used = parse_count(count_text, limit);
  if (used < 0) return invalid_argument("rate " + quoted(text) + " has a limit that is too large");
  if (used == 0 || static_cast<std::size_t>(used) != count_text.size() || count_text[0] == '+' ||
      count_text[0] == '-') {
    return invalid_argument("rate " + quoted(text) + " must start with a whole number limit");
  }
  if (limit == 0)
    return invalid_argument("rate " + quoted(text) + " must have a limit of at least 1");
  for (const Unit& unit : kUnitWords) {
    if (per == unit.name) return Rate{limit, unit.micros};
  }
  Result<Micros> period = parse_duration(per);
  if (!period) {
    return invalid_argument("rate " + quoted(text) +
                            " has no valid period after '/' (use sec, min, hour, day or a "
                            "duration such as 30s)");
  }
  return Rate{limit, *period};
}

std::string format_duration(Micros d) {
  for (auto it = kDurationUnits.rbegin(); it != kDurationUnits.rend(); ++it) {
    if (d != 0 && d % it->micros == 0)
      return std::to_string(d / it->micros) + std::string(it->name);
  }
  return std::to_string(d) + "us";
}

}  // namespace spillway
