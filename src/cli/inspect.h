// spillway inspect [--config FILE] [--backend URL] NAME=VALUE... (docs/SPEC.md §4): for a request
// with these attributes, each layer that applies, the key it charges, the key name the backend
// stores it under (a digest by default: backend.key_hash), and the key's state now — read from
// Redis itself (no breaker, cache or fallback in between) with a check of cost 0, which changes
// nothing. On the memory backend the state lives in the serving process, so only keys are shown. So
// digested Redis keys stay debuggable: whoever knows a caller's attributes finds the caller's keys;
// whoever reads Redis does not learn the callers.
//
// spillway inspect --admin URL --token-file FILE NAME=VALUE...: the same, answered by a running
// server (GET /v1/inspect on its admin listener, src/server/admin_service.h): its policy in force,
// its tenant records and its store, so the memory backend's state is shown too. The client is
// `spillway tenants`' (src/cli/admin_client.h); the text is the same, after a line naming the
// server, and --json prints the server's object as it is.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// Returns the exit status: 0 printed, 1 a config, policy or backend error (a layer whose state
// could not be read included; with --admin: the server could not be reached, refused the token,
// has no /v1/inspect or answered another error), 2 bad arguments (with --admin: the server's 400
// too).
int run_inspect(int argc, char** argv, int first, std::ostream& out, std::ostream& err);

}  // namespace spillway::cli
