// Redis URLs (backend.url, --backend) into the client's options. Pure function; thread-safe.
#pragma once

#include <string_view>

#include "spillway/error.h"
#include "src/redis/client.h"

namespace spillway::redis {

// Parses "redis://[user:password@]host[:port][/db]" (an IPv6 host in brackets) or
// "unix:///path/to/socket[?db=N&user=U&password=P]" into options (other fields keep their
// defaults); user and password may be percent-encoded. Errors name the part of the URL that is
// wrong.
Result<ClientOptions> parse_redis_url(std::string_view url);

}  // namespace spillway::redis
