// The config fuzz target's body (fuzz/config_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The input is the text of a config file. It goes to policy::parse_config twice, and:
//   - an error is one line that starts with "line N: ", N a line of the input;
//   - the same text gives the same answer both times;
//   - a config that parses builds: Policy::make(config.policy) succeeds.
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_config_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
