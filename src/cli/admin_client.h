// The HTTP client of the admin API (src/server/admin_service.h) that `spillway tenants` and
// `spillway inspect --admin` share: --admin URL (http://host:port, the server's admin_listen),
// one request per connection with `Authorization: Bearer <token>`, the answer's status and body.
//
// Blocking calls on the calling thread; no shared state (thread-safe).
#pragma once

#include <boost/beast/http/verb.hpp>
#include <chrono>
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

// How long a request may take: to connect (an address that drops packets would otherwise hang
// for the system's TCP timeout, minutes), then to send and be answered (an import of a large
// file is answered once every record is stored: the server allows 120 s for its body).
struct AdminTimeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds answer{300'000};
};

// One request, answered. Errors (kUnavailable): the server could not be reached or its answer
// read, "admin API at HOST:PORT: Connection refused" (the system's words), "... no connection
// within 10 s", "... no answer within 300 s"; never the token.
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
