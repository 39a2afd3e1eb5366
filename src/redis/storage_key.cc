#include "src/redis/storage_key.h"

#include "src/core/decimal.h"

namespace spillway::redis {

std::string storage_key(std::string_view prefix, const KeyDigest& digest, std::string_view key,
                        const Limit& limit) {
  // "<algorithm>:<L>:<P>:<B>:" — what the readable form writes before the key.
  std::string limit_part(algorithm_name(limit.algorithm()));
  for (std::int64_t n : {limit.limit(), limit.period(), limit.burst()}) {
    limit_part += ':';
    append_decimal(limit_part, n);
  }
  limit_part += ':';
  std::string out;
  out.reserve(prefix.size() + limit_part.size() + key.size() + 3);
  out.append(prefix).append(1, ':');
  if (digest.hash() == KeyHash::kNone) {
    out.append(limit_part).append(1, '{').append(key).append(1, '}');
    return out;
  }
  limit_part.append(key);
  out.push_back('{');
  digest.append(out, limit_part);
  out.push_back('}');
  return out;
}

}  // namespace spillway::redis
