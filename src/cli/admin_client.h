// The admin API's side of the command line (src/server/admin_service.h) that `spillway tenants`
// and `spillway inspect --admin` share: --admin URL (http://host:port, the server's
// admin_listen), one request per connection with `Authorization: Bearer <token>` through the
// CLI's HTTP client (src/cli/http_client.h: its timeouts and its words), the answer's status and
// body.
//
// Blocking calls on the calling thread; no shared state (thread-safe).
#pragma once

#include <boost/beast/http/verb.hpp>
#include <string>
#include <string_view>

#include "spillway/error.h"
#include "src/cli/http_client.h"

namespace spillway::cli {

using AdminEndpoint = HttpEndpoint;
using AdminAnswer = HttpAnswer;

// "http://host:port" (a path after it is ignored; an IPv6 host in brackets). Errors name --admin
// and the form expected.
Result<AdminEndpoint> parse_admin_url(const std::string& url);

// How long a request may take: to connect, then to send and be answered (HttpTimeouts: 10 s,
// 300 s; the server allows 120 s for an import's body).
using AdminTimeouts = HttpTimeouts;

// One request, answered. Errors (kUnavailable): the server could not be reached or its answer
// read, http_request's words after "admin API at HOST:PORT: " ("... Connection refused", "... no
// connection within 10 s", "... no answer within 300 s"); never the token.
Result<AdminAnswer> admin_request(const AdminEndpoint& endpoint, const std::string& token,
                                  boost::beast::http::verb method, const std::string& target,
                                  std::string body = "",
                                  const std::string& content_type = "application/json",
                                  AdminTimeouts timeouts = {});

// Text as one path segment or query value: every byte but letters, digits and -._~
// percent-encoded.
std::string percent_encoded(std::string_view text);

// The message of an error answer: its {"error": …} member, or the body as it is.
std::string admin_error_message(const AdminAnswer& answer);

}  // namespace spillway::cli
