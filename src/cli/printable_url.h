// A backend URL as it may be printed: the password (in "user:password@" or a "password=" query
// parameter) replaced by "***", everything else as given. For log lines and errors.
//
// Pure function; thread safe. Never fails: text that is not a URL comes back unchanged.
#pragma once

#include <string>
#include <string_view>

namespace spillway::cli {

std::string printable_url(std::string_view url);

}  // namespace spillway::cli
