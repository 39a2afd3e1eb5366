// spillway bench (docs/SPEC.md §4): a load generator against a backend. Threads check random keys
// for a duration (or a number of requests) and the command prints checks/s, latency percentiles and
// the admitted / denied / error totals.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// Returns the exit status: 0 ok, 1 backend errors occurred, 2 bad arguments.
int run_bench(int argc, char** argv, int first, std::ostream& out, std::ostream& err);

}  // namespace spillway::cli
