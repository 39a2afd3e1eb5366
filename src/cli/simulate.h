// spillway simulate (docs/SPEC.md §4): offered traffic (a trace file or a generated pattern)
// through each algorithm under one limit, side by side: a summary on stdout, and on request the
// HTML report, the series as CSV, one SVG chart, and the generated trace itself.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// argv[first..] are the simulate arguments; `--trace -` reads the trace from `in`. Files go where
// their options say, "-" to `out` (one of them at most; the summary then goes to `err`), and each
// file written is announced on `err`. Returns the exit status: 0 ok, 1 a bad trace or a file
// that cannot be written (with the system's reason), 2 bad arguments (the message names the
// option).
int run_simulate(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                 std::ostream& err);

}  // namespace spillway::cli
