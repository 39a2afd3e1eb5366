// A duration as people read it in the CLI's text output: "250 ms", "59.8 s", "2.5 min", "3 h",
// "12 us". One decimal at most (a trailing ".0" dropped), in the largest unit that keeps the
// number at 1 or more. Machine formats (JSON, name=value lines) keep exact integers instead.
// Pure function; thread-safe.
#pragma once

#include <string>

#include "spillway/duration.h"

namespace spillway::cli {

// `d` in microseconds; a negative duration gets a leading "-".
std::string human_duration(Micros d);

}  // namespace spillway::cli
