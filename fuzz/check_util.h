// What the fuzz checks share: stopping loudly when an invariant does not hold.
#pragma once

#include <string_view>

namespace spillway::fuzz {

// Prints "fuzz invariant violated: <what>: <detail>" on stderr and aborts, so that libFuzzer
// saves the input as a crash (and the corpus test dies naming the problem).
[[noreturn]] void violated(std::string_view what, std::string_view detail = {});

}  // namespace spillway::fuzz
