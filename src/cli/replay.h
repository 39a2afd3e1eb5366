// spillway replay (docs/SPEC.md §4): runs a CSV trace "t_us,key[,cost]" through one limiter with a
// manual clock and prints one decision per line.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/duration.h"
#include "spillway/error.h"

namespace spillway::cli {

struct TraceLine {
  Micros at;
  std::string key;
  std::int64_t cost;
};

// nullopt for blank and '#' comment lines; an error names what is wrong (without line number).
Result<std::optional<TraceLine>> parse_trace_line(std::string_view line);

// argv[first..] are the replay arguments. Reads the trace from the FILE argument or `in`.
// Returns the exit status: 0 ok, 1 bad trace or backend failure, 2 bad arguments.
int run_replay(int argc, char** argv, int first, std::istream& in, std::ostream& out,
               std::ostream& err);

}  // namespace spillway::cli
