// The rls fuzz target's body (fuzz/rls_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The input is the text of an envoyproxy/ratelimit rules file. It goes to rls::parse_rls_yaml
// twice, and:
//   - an error is kInvalidArgument, one line that starts with "line N: ", N a line of the input;
//   - the same text gives the same answer both times;
//   - rules that load decide: for every rule path in them (its keys and values, a wildcard's
//     prefix + "x"), RlsEngine on a MemoryStore answers with one status per descriptor, OVER_LIMIT
//     only where a limit applies, and a rule with a limit is matched by its own path.
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_rls_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
