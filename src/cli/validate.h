// spillway validate FILE (docs/SPEC.md §4): checks a config file as serve would before it starts;
// errors name the line and the field.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// argv[first..] are the validate arguments: exactly one FILE ("-": read from `in`), or --rls PATH.
// A config is checked as serve checks it before binding and connecting (src/cli/preflight.h):
// every error of the file, one line each, "spillway validate: FILE: line N: path: what". Prints
// "FILE: ok (N layers)" to `out`, or the errors to `err`. Returns the exit status: 0 valid,
// 1 invalid or unreadable file, 2 bad arguments.
int run_validate(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                 std::ostream& err);

}  // namespace spillway::cli
