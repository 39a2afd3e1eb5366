// spillway inspect [--config FILE] [--backend URL] NAME=VALUE... (docs/SPEC.md §4): for a request
// with these attributes, each layer that applies, the key it charges, the key name the backend
// stores it under (a digest by default: backend.key_hash), and the key's state now — read from
// Redis itself (no breaker, cache or fallback in between) with a check of cost 0, which changes
// nothing. On the memory backend the state lives in the serving process, so only keys are shown. So
// digested Redis keys stay debuggable: whoever knows a caller's attributes finds the caller's keys;
// whoever reads Redis does not learn the callers.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// Returns the exit status: 0 printed, 1 a config, policy or backend error (a layer whose state
// could not be read included), 2 bad arguments.
int run_inspect(int argc, char** argv, int first, std::ostream& out, std::ostream& err);

}  // namespace spillway::cli
