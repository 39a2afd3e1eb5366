// JSON text written by hand on the request path: string literals and the {"error": …} body that
// every 4xx/5xx of the server and the service carries. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace spillway::server {

// Appends `text` as a JSON string literal: quotes, backslashes and control characters escaped;
// other bytes as they are (the caller makes sure they are UTF-8).
void append_json_string(std::string& out, std::string_view text);

// `text` with every byte that is not part of valid UTF-8 written as the text \xNN.
std::string utf8_or_escaped(std::string_view text);

// {"error":"<message>"}; bytes of the message that are not valid UTF-8 (a message may quote
// the client's path or headers) are written as the text \xNN, so the body is always valid JSON.
std::string error_body(std::string_view message);

}  // namespace spillway::server
