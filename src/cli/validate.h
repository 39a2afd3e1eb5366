// spillway validate FILE (docs/SPEC.md §4): checks a config file; errors name the line and the
// field.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// argv[first..] are the validate arguments: exactly one FILE. Prints "FILE: ok (N layers)" to
// `out`, or the error to `err`. Returns the exit status: 0 valid, 1 invalid or unreadable file,
// 2 bad arguments.
int run_validate(int argc, char** argv, int first, std::ostream& out, std::ostream& err);

}  // namespace spillway::cli
