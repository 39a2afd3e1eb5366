// spillway tenants set|get|delete|list|import (docs/SPEC.md §4): a client of the admin API
// (src/server/admin_service.h) of a running `spillway serve`.
//
//   tenants set KEY [--plan P] [--limit LAYER=RATE[,LAYER=RATE...]] [--blocked]
//   tenants get KEY | tenants delete KEY | tenants reset KEY --layer LAYER
//   tenants list [--plan P] [--cursor ID] [--page N] [--all]
//   tenants import FILE (NDJSON, or CSV "key,plan" when FILE ends in .csv; - for standard input)
// Every command takes --admin URL (http://host:port, the server's admin_listen) and --token-file
// FILE (its first token is sent as Authorization: Bearer). The server's JSON answer is printed
// as it is; an error answer is printed on stderr.
#pragma once

#include <iosfwd>

namespace spillway::cli {

// Returns the exit status: 0 the server answered 2xx, 1 it answered an error (or could not be
// reached), 2 bad arguments.
int run_tenants(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                std::ostream& err);

}  // namespace spillway::cli
