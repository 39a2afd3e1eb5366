// The HTTP/1.1 text of a response, as a connection writes it: status line, headers, body. Only
// well-formed headers of the handler go out, so a handler cannot break the framing (no CR/LF in
// values, no Content-Length or Transfer-Encoding of its own). And the {"error": …} body that
// every 4xx/5xx of the server and the service carries. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "src/server/http_server.h"

namespace spillway::server {

// What the request asked of its response.
struct ResponseFraming {
  bool keep_alive = true;  // false: the response says "Connection: close"
  bool http10 = false;     // HTTP/1.0: a kept-alive response says "Connection: keep-alive"
  bool head = false;       // HEAD: the response has no body
};

// Appends `response` to `out`: the status line (a status outside 200..999 becomes 500),
// Content-Type (only with a body: none for an empty body, 204 or 304), Content-Length (neither
// length nor body for 204 and 304), the handler's headers
// that are valid and not Content-Length, Transfer-Encoding or Connection, the Connection header,
// a blank line and the body (none for HEAD). A handler's "Connection: close" clears
// framing.keep_alive. Returns the status written.
int append_response(std::string& out, const HttpResponse& response, ResponseFraming& framing);

// {"error":"<message>"}; bytes of the message that are not valid UTF-8 (a message may quote
// the client's path or headers) are written as the text \xNN, so the body is always valid JSON.
std::string error_body(std::string_view message);

}  // namespace spillway::server
