// The Redis key that holds one (key, limit)'s state (docs/SPEC.md §3). Two forms:
//   digested (KeyHash kSha256, kHmacSha256; the default):
//       "<prefix>:{<22 base64url characters>}"  — the digest of "<algorithm>:<L>:<P>:<B>:<key>",
//       so neither the caller's values nor the limit can be read from Redis; the digest is the
//       Redis Cluster hash tag (one caller's key under one limit is one slot, as before).
//   readable (kNone): "<prefix>:<algorithm>:<L>:<P>:<B>:{<key>}" — the numbers are fixed-format
//       and the key comes last, so no two (limit, key) pairs share a Redis key; the key is the
//       hash tag.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/key_hash.h"
#include "spillway/limit.h"

namespace spillway::redis {

std::string storage_key(std::string_view prefix, const KeyDigest& digest, std::string_view key,
                        const Limit& limit);

// A reservation's records (usage-based limits, lua/all_or_nothing.lua and lua/settle.lua), by its
// id (base64url, so never a brace): the home record "<prefix>:rsv:{<id>}", found from the id
// alone; on a Redis Cluster, one part record per other slot of its keys, on that slot:
// "<prefix>:rsv:<id>:{<slot_tag(slot)>}". Neither can be a storage_key (no algorithm is "rsv").
std::string reservation_home_key(std::string_view prefix, std::string_view id);
std::string reservation_part_key(std::string_view prefix, std::string_view id, std::uint16_t slot);

}  // namespace spillway::redis
