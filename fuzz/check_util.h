// What the fuzz checks share: stopping loudly when an invariant does not hold.
#pragma once

#include <string>
#include <string_view>

namespace spillway::fuzz {

// Prints "fuzz invariant violated: <what>: <detail>" on stderr and aborts, so that libFuzzer
// saves the input as a crash (and the corpus test dies naming the problem).
[[noreturn]] void violated(std::string_view what, std::string_view detail = {});

// Checks a YAML loader's error message for `text`: one line, starting "line N: " where N is a
// line the text has (yaml-cpp also breaks lines at '\r' and at some non-ASCII characters).
void check_line_error(std::string_view text, const std::string& message);

}  // namespace spillway::fuzz
