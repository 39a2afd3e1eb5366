// One line of CSV (RFC 4180) split into its fields: a field is either bare (no '"' in it) or
// quoted ("…", a '"' inside written twice, commas inside kept), e.g. `"a,b","say ""hi""",c` is
// the three fields `a,b`, `say "hi"` and `c`. The line comes without its line break; a quoted
// field that does not end on its line is an error (the tenant import's keys and plans hold no
// line break). Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"

namespace spillway::server {

// The fields of `line`, or an error naming what is wrong and at which byte (from 1): a '"' inside
// a bare field, a quoted field followed by something other than ',' or the end of the line, a
// quoted field not closed.
Result<std::vector<std::string>> csv_fields(std::string_view line);

}  // namespace spillway::server
