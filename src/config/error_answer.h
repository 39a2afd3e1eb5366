// What a request gets when its decision failed: the one place where backend.on_error and
// rls.on_error are applied (every front end asks answer_error, then renders the answer in its
// protocol). Pure functions; thread-safe.
#pragma once

#include "spillway/error.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "src/config/on_error.h"

namespace spillway::policy {

enum class ErrorAnswer {
  kInvalid,  // the request itself is wrong (kInvalidArgument): 400 / INVALID_ARGUMENT, as it is
  kFail,     // the error itself goes back (rls.on_error: error; a gRPC status)
  kAllow,    // admitted without a decision (fail open)
  kDeny,     // denied: 503 (403 to nginx), OVER_LIMIT, DENY_ALL
};

// The answer to `error` when the front end fails as `fail` says: an invalid request is always
// kInvalid; a caller that tenant records that never loaded may block (kTenantsNotLoaded) is
// always denied: a caller an operator blocked must not be admitted by on_error.
inline ErrorAnswer answer_error(const Error& error, ErrorAnswer fail) {
  if (error.code == Errc::kInvalidArgument) return ErrorAnswer::kInvalid;
  if (error.field == kTenantsNotLoaded) return ErrorAnswer::kDeny;
  return fail;
}

// backend.on_error: local admits what still fails (the in-process limiter decided already).
inline ErrorAnswer answer_error(const Error& error, OnError on_error) {
  return answer_error(error, on_error == OnError::kDeny ? ErrorAnswer::kDeny : ErrorAnswer::kAllow);
}

// rls.on_error.
inline ErrorAnswer answer_error(const Error& error, RlsOnError on_error) {
  return answer_error(error, on_error == RlsOnError::kError   ? ErrorAnswer::kFail
                             : on_error == RlsOnError::kAllow ? ErrorAnswer::kAllow
                                                              : ErrorAnswer::kDeny);
}

}  // namespace spillway::policy
