// The identity of (limit, key) inside a process, written once for every wrapper that keeps
// something per key and limit (the over-limit cache's denials, the lease table's leases): the
// limit's algorithm and kind, its numbers (limit, period, burst, max_delay, reserved) as six 8-byte
// words in this machine's byte order, then the caller's key (a denial of a limit that delays says
// another wait than the same limit's without a delay; a priority with a share reserved above it is
// denied where a higher one is not). Fixed-size words make it a prefix code: two identities are
// equal exactly when the limits and keys are, so one key under two limits is two entries, as the
// stores keep state (docs/SPEC.md §3).
//
// The backends' own names for a stored key are storage formats and stay theirs: the memory
// store's varint prefix that fits a table slot inline (src/memory/table_key.h), Redis's key that
// lives in a shared server across versions (src/redis/storage_key.h).
//
// Also the answer a wrapper gives for a key it did not consult (Store's contract: next to a
// denial it answered itself). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/decision.h"
#include "spillway/limit.h"

namespace spillway {

// Appends the identity of (limit, key) to `out` (no allocation once `out` has grown).
inline void append_limit_key(std::string& out, const Limit& limit, std::string_view key) {
  const std::int64_t numbers[] = {
      static_cast<std::int64_t>(limit.algorithm()) | static_cast<std::int64_t>(limit.kind()) << 8,
      limit.limit(),
      limit.period(),
      limit.burst(),
      limit.max_delay(),
      limit.reserved()};
  out.append(reinterpret_cast<const char*>(numbers), sizeof numbers);
  out.append(key);
}

inline std::string limit_key(const Limit& limit, std::string_view key) {
  std::string out;
  out.reserve(6 * sizeof(std::int64_t) + key.size());
  append_limit_key(out, limit, key);
  return out;
}

// What a key reports that a wrapper answered for without asking the backend, because another key
// of the same all-or-nothing request was denied: admitted, its whole limit remaining, local.
inline Decision not_consulted(const Limit& limit) {
  return Decision{
      .allowed = true, .limit = limit.limit(), .remaining = limit.limit(), .local = true};
}

}  // namespace spillway
