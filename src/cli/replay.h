// spillway replay (docs/SPEC.md §4): runs a CSV trace "t_us,key[,cost]" through one limiter with a
// manual clock and prints one decision per line (a header first, which replay also reads back).
// A trace whose header is "t_us,key,cost,actual[,done_us]" also has usage-based requests: a line
// with an actual cost reserves its cost as the estimate at t_us and commits the actual cost at
// done_us (default t_us), as an LLM API's request does when its response ends.
#pragma once

#include <cstddef>
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
  // Usage columns (with `usage`): the actual cost (empty: a plain check) and when it is known.
  std::optional<std::int64_t> actual = std::nullopt;
  Micros done = 0;  // with `actual`: >= at (µs)
};

// nullopt for blank and '#' comment lines; an error names what is wrong (without line number).
// A line has 2 to `max_fields` fields; those after the third are ignored, unless `usage`: then
// the fourth is the actual cost (a whole number 0..2^52, or empty) and the fifth done_us (0..2^52,
// not before t_us; empty or absent: t_us).
Result<std::optional<TraceLine>> parse_trace_line(std::string_view line, std::size_t max_fields = 3,
                                                  bool usage = false);

// A trace's lines in order, as replay and simulate read them: parse_trace_line, except that the
// first line with content may be a header, `t_us,key[,cost[,…]]` (skipped: nullopt). A header of
// more columns lets every line have that many, the ones after cost ignored; so replay's own
// output (t_us,key,cost,allowed,…) replays. A header `t_us,key,cost,actual[,done_us]` reads the
// usage columns. Not thread-safe (one per trace).
class TraceParser {
 public:
  Result<std::optional<TraceLine>> parse(std::string_view line);
  // Whether the header named the usage columns (known once a line with content was parsed).
  bool usage() const { return usage_; }

 private:
  bool started_ = false;        // a line with content was seen: no header from now on
  std::size_t max_fields_ = 3;  // the header's columns when more than 3
  bool usage_ = false;
};

// argv[first..] are the replay arguments. Reads the trace from the FILE argument, or `in` when
// it is "-" or absent. Returns the exit status: 0 ok, 1 bad trace or backend failure, 2 bad
// arguments or a trace file that cannot be opened (the message gives the reason).
int run_replay(int argc, char** argv, int first, std::istream& in, std::ostream& out,
               std::ostream& err);

}  // namespace spillway::cli
