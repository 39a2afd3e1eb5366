// What a decision adds to its JSON access log line (HttpResponse::log_fields): members of a JSON
// object without braces, e.g.
//   "allowed":false,"denied_by":"per_key","layer":"per_key","plan":"free"
//   "allowed":true,"backend_error":"timeout","on_error":"allow"
// Layer and plan names come from the config; a caller's key or value never appears.
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "spillway/error.h"
#include "spillway/policy_engine.h"

namespace spillway::server {

// allowed, denied_by (when denied), layer (the denying layer, else the enforced layer with the
// least remaining), plan (that layer's, when it has one), shadow_denied (names, when any).
std::string decision_log_fields(const policy::PolicyDecision& decision);

// A backend error and what on_error answered: allowed, backend_error (errc_name), on_error.
std::string backend_error_log_fields(const Error& error, bool allowed);

}  // namespace spillway::server
