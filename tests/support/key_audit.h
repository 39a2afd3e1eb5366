// Inspects, in one atomic server-side step, the keys matching a pattern: how many there are,
// how many have no TTL, and the longest TTL (ms). Keys cannot expire half-way through the audit.
#pragma once

#include <sstream>
#include <string>

#include "tests/support/redis_server.h"

namespace spillway::testing {

struct KeyAudit {
  long long keys = 0;
  long long without_ttl = 0;
  long long max_pttl_ms = 0;
};

inline KeyAudit audit_keys(const RedisServer& server, const std::string& pattern) {
  const std::string script =
      "local n, bare, longest = 0, 0, 0 "
      "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
      "  n = n + 1 "
      "  local t = redis.call('PTTL', k) "
      "  if t == -1 then bare = bare + 1 elseif t > longest then longest = t end "
      "end "
      "return {n, bare, longest}";
  std::istringstream reply(server.cli("EVAL \"" + script + "\" 0 '" + pattern + "'"));
  KeyAudit audit;
  reply >> audit.keys >> audit.without_ttl >> audit.max_pttl_ms;
  return audit;
}

}  // namespace spillway::testing
