// Why a Redis call failed, in plain words, for the lines an operator reads (serve's "not
// answering" line, --require-backend's refusal, the readiness probe's error): the Redis error
// codes that make every check fail (NOAUTH, WRONGPASS, NOPERM, LOADING, READONLY, MASTERDOWN,
// MISCONF, OOM, BUSY) and a call that got no reply in time, each with what it means and what to
// do. Not on the request path (a check's error keeps Redis' own text).
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace spillway::redis {

// The plain-words cause of `message` (an error of a Redis call: "redis replied: NOAUTH …",
// "… not connected (AUTH failed: WRONGPASS …)", "… no reply in time …"), e.g. "unauthenticated:
// the server requires a password and none was given (redis://:PASSWORD@host:port)"; empty when
// the message names no cause this knows. A code counts as a word of its own (upper case, at the
// start or after a character that is not a letter or digit, followed by a space or the end).
std::string_view error_cause(std::string_view message);

// Whether `message` names the Redis error `code` ("OOM", "NOAUTH" …) as a word of its own (as
// error_cause() reads codes).
bool names_redis_code(std::string_view message, std::string_view code);

// `message`, followed by "; " and its cause when error_cause() knows one.
std::string with_error_cause(std::string message);

}  // namespace spillway::redis
