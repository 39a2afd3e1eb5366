// spillway bench (docs/SPEC.md §4): a load generator against a backend. Threads check random keys
// for a duration (or a number of requests), back to back (closed loop) or on a schedule of --rate
// checks/s (open loop: latency counted from each check's scheduled time), and the command prints
// checks/s, latency percentiles (p50, p99, p99.9, max) and the admitted / denied / error totals.
#pragma once

#include <iosfwd>
#include <string_view>

namespace spillway::cli {

// --key-prefix's default: Redis keys apart from the production prefix ("spillway") that serve
// uses, so a bench against a live Redis never touches its users' budgets.
inline constexpr std::string_view kBenchKeyPrefix = "spillway-bench";

// Returns the exit status: 0 ok, 1 backend errors occurred, 2 bad arguments.
int run_bench(int argc, char** argv, int first, std::ostream& out, std::ostream& err);

}  // namespace spillway::cli
