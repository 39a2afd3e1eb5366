// The trace id of a W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/),
// for the JSON access log: `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01` gives
// "4bf92f3577b34da6a3ce929d0e0e4736". Accepted: 2 lower-case hex digits of version (not "ff"),
// 32 of trace id (not all zero), 16 of parent id (not all zero), 2 of flags, dash-separated; a
// later version may add fields after a dash. Anything else gives nothing: a malformed header is
// ignored and never logged, so a caller cannot put text of its own (a key) into a log line.
//
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spillway::server {

std::optional<std::string> trace_id_of(std::string_view traceparent);

}  // namespace spillway::server
