// The HTTP client of the admin API (src/server/admin_service.h) that `spillway tenants` and
// `spillway inspect --admin` share: --admin URL (http://host:port, the server's admin_listen),
// one request per connection with `Authorization: Bearer <token>`, the answer's status and body.
//
// Blocking calls on the calling thread; no shared state (thread-safe).
#pragma once

#include <boost/beast/http/verb.hpp>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::cli {

struct AdminEndpoint {
  std::string host;
  std::string port;
};

struct AdminAnswer {
  int status = 0;
  std::string body;
};

// "http://host:port" (a path after it is ignored; an IPv6 host in brackets). Errors name --admin
// and the form expected.
Result<AdminEndpoint> parse_admin_url(const std::string& url);

// One request, answered. Errors (kUnavailable): the server could not be reached or its answer
// read, "admin API at HOST:PORT: Connection refused" (the system's words); never the token.
Result<AdminAnswer> admin_request(const AdminEndpoint& endpoint, const std::string& token,
                                  boost::beast::http::verb method, const std::string& target,
                                  std::string body = "",
                                  const std::string& content_type = "application/json");

// Text as one path segment or query value: every byte but letters, digits and -._~
// percent-encoded.
std::string percent_encoded(std::string_view text);

// The message of an error answer: its {"error": …} member, or the body as it is.
std::string admin_error_message(const AdminAnswer& answer);

}  // namespace spillway::cli
