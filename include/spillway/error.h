// Error values returned on the request path. spillway never throws while deciding; functions
// that can fail return Result<T> (std::expected) whose error names what was wrong.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace spillway {

enum class Errc {
  kInvalidArgument,  // caller input was rejected; nothing was changed
  kStoreFull,        // the store tracks its maximum number of keys and could not take a new one
  kUnavailable,      // the backend could not be reached or answered with an error
  kTimeout,          // the backend did not answer in time
  kInternal,         // a bug: an invariant did not hold
  kNotFound,         // no such thing (a reservation never made, or expired); nothing was changed
  kConflict,         // it was already done (a reservation already settled); nothing was changed
};

struct Error {
  Errc code;
  std::string message;  // one line, names the offending field or value
  // With kInvalidArgument: the name of the input to blame (a request attribute, a JSON field)
  // when one input is; empty otherwise. For callers that answer differently by input.
  std::string field = {};
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> invalid_argument(std::string message) {
  return std::unexpected(Error{Errc::kInvalidArgument, std::move(message)});
}

std::string_view errc_name(Errc code);

// Whether `error` says the backend failed (kUnavailable or kTimeout: down, unreachable, too slow,
// circuit open) rather than the request (kInvalidArgument …): what the circuit breaker counts, what
// on_error: local decides in-process, what the Redis client may send again.
constexpr bool is_backend_failure(const Error& error) {
  return error.code == Errc::kUnavailable || error.code == Errc::kTimeout;
}

}  // namespace spillway
