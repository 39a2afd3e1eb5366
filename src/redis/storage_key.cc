#include "src/redis/storage_key.h"

#include "src/core/decimal.h"
#include "src/redis/key_slot.h"

namespace spillway::redis {

namespace {

// "<algorithm>:<L>:<P>:<B>:": what both forms write (or hash) before the key.
void append_limit(std::string& out, const Limit& limit) {
  out.append(algorithm_name(limit.algorithm()));
  for (std::int64_t n : {limit.limit(), limit.period(), limit.burst()}) {
    out.push_back(':');
    append_decimal(out, n);
  }
  out.push_back(':');
}

}  // namespace

std::string storage_key(std::string_view prefix, const KeyDigest& digest, std::string_view key,
                        const Limit& limit) {
  std::string out;
  out.reserve(prefix.size() + 48 + key.size());
  out.append(prefix).push_back(':');
  if (digest.hash() == KeyHash::kNone) {
    append_limit(out, limit);
    out.append(1, '{').append(key).push_back('}');
    return out;
  }
  std::string hashed;
  hashed.reserve(48 + key.size());
  append_limit(hashed, limit);
  hashed.append(key);
  out.push_back('{');
  digest.append(out, hashed);
  out.push_back('}');
  return out;
}

std::string reservation_home_key(std::string_view prefix, std::string_view id) {
  std::string out;
  out.reserve(prefix.size() + id.size() + 7);
  out.append(prefix).append(":rsv:{").append(id).push_back('}');
  return out;
}

std::string reservation_part_key(std::string_view prefix, std::string_view id, std::uint16_t slot) {
  const std::string_view tag = slot_tag(slot);
  std::string out;
  out.reserve(prefix.size() + id.size() + tag.size() + 9);
  out.append(prefix).append(":rsv:").append(id).append(":{").append(tag).push_back('}');
  return out;
}

}  // namespace spillway::redis
