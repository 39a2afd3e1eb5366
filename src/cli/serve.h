// spillway serve (docs/SPEC.md §4): the HTTP server on the configured backend and policy.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// Runs until SIGINT or SIGTERM (drains in-flight requests, exit 0). SIGHUP reloads --config; a
// config that fails to load is logged and the running one keeps serving. Bad arguments: exit 2;
// a config or backend that cannot start: exit 1.
int run_serve(int argc, char** argv, int first, std::ostream& err);

}  // namespace spillway::cli
