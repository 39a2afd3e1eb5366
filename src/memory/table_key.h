// How the memory store names a key in its tables, and how it hashes that name.
//
// A stored key is the Limit's three numbers (limit, period, burst) as LEB128 varints followed by
// the user's bytes. The varints are a prefix code, so no user key can imitate another limit's key:
// two stored keys are equal exactly when the numbers and the user's bytes are. For 100 per second
// and a 12-byte user key that is 1 + 3 + 1 + 12 = 17 bytes, short enough to live inline in a
// table slot (src/memory/flat_table.h). The prefix also gives the limit back to a sweep, which
// needs it to tell whether the key's state is idle.
//
// The hash is seeded (one random seed per store), so that nobody can choose user keys that all
// land in one probe run (hash flooding). It is a multiply-fold hash over 8-byte words: every input
// word goes through a 64×64→128-bit multiply whose halves are folded together.
//
// Thread safety: plain functions and values; no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "spillway/limit.h"

namespace spillway::memory {

namespace hash_detail {

inline constexpr std::uint64_t kA = 0x9E3779B97F4A7C15ull;  // odd constants with mixed bits
inline constexpr std::uint64_t kB = 0xC2B2AE3D27D4EB4Full;
inline constexpr std::uint64_t kC = 0x165667B19E3779F9ull;
inline constexpr std::uint64_t kD = 0xD6E8FEB86659FD93ull;

__extension__ using U128 =
    unsigned __int128;  // GCC's 128-bit integer (x86-64 MUL gives both halves)

inline std::uint64_t fold_mul(std::uint64_t a, std::uint64_t b) {
  const U128 p = static_cast<U128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
}
inline std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint64_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace hash_detail

// A seeded 64-bit hash of `n` bytes.
inline std::uint64_t hash_bytes(const char* p, std::size_t n, std::uint64_t seed) {
  using namespace hash_detail;
  std::uint64_t h = seed ^ fold_mul(n ^ kA, kD);
  while (n > 16) {
    // The seed is in both factors: no chosen block can zero one without knowing it.
    h = fold_mul(load64(p) ^ kB ^ h, load64(p + 8) ^ kC ^ seed);
    p += 16;
    n -= 16;
  }
  std::uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = load64(p);
    b = load64(p + n - 8);
  } else if (n >= 4) {
    a = load32(p);
    b = load32(p + n - 4);
  } else if (n > 0) {
    a = std::uint64_t{static_cast<unsigned char>(p[0])} << 16 |
        std::uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8 |
        static_cast<unsigned char>(p[n - 1]);
  }
  h = fold_mul(a ^ kB ^ h, b ^ kC ^ seed);
  return fold_mul(h ^ kA, kD);
}

// A key as a table looks it up. Short keys (at most kInlineKey bytes, the common case) come as
// the image a table slot holds: a size byte, the bytes, zeros; comparing one is a fixed-size
// compare and hashing one is three multiplies. Longer keys keep the varint prefix and borrow the
// user's bytes (valid while the caller's string is).
struct TableKey {
  static constexpr std::size_t kInlineKey = 23;  // bytes that fit in a slot's image
  static constexpr std::size_t kImageBytes = 1 + kInlineKey;
  static constexpr std::size_t kMaxPrefix = 30;  // three varints of at most 10 bytes

  std::uint64_t hash;
  std::size_t size;  // bytes of the stored key: prefix + user
  // size <= kInlineKey: the slot image (size, bytes, zeros; kImageBytes of it are compared).
  // size > kInlineKey: the varint prefix, prefix_size bytes.
  alignas(8) std::array<char, 32> bytes;
  std::uint8_t prefix_size;
  std::string_view user;

  bool is_inline() const { return size <= kInlineKey; }
  const char* image() const { return bytes.data(); }

  // Whether `stored` (size bytes written by write_long) is this long key.
  bool equals_long(const char* stored, std::size_t n) const {
    return n == size && std::memcmp(stored, bytes.data(), prefix_size) == 0 &&
           std::memcmp(stored + prefix_size, user.data(), user.size()) == 0;
  }

  // Writes a long key's `size` bytes to `out`.
  void write_long(char* out) const {
    std::memcpy(out, bytes.data(), prefix_size);
    std::memcpy(out + prefix_size, user.data(), user.size());
  }
};

namespace key_detail {

inline std::size_t put_varint(char* out, std::uint64_t v) {
  std::size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<char>(v);
  return n;
}

// Reads one varint at `p` (within `end`); returns the bytes it took (0 when malformed).
inline std::size_t get_varint(const char* p, const char* end, std::uint64_t& v) {
  v = 0;
  for (std::size_t i = 0; i < 10 && p + i < end; ++i) {
    const auto byte = static_cast<unsigned char>(p[i]);
    v |= std::uint64_t{byte & 0x7Fu} << (7 * i);
    if (byte < 0x80) return i + 1;
  }
  return 0;
}

// The seed a user key is hashed with under one limit: the store's seed with the numbers folded in.
inline std::uint64_t numbers_seed(std::uint64_t seed, std::uint64_t limit, std::uint64_t period,
                                  std::uint64_t burst) {
  using namespace hash_detail;
  return seed ^ fold_mul(limit ^ kB, period ^ kC) ^ fold_mul(burst ^ kD, seed ^ kA);
}

}  // namespace key_detail

// Copies n <= 24 bytes with a few fixed-size moves (no call for the common short key).
inline void copy_short(char* out, const char* in, std::size_t n) {
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) std::memcpy(out + i, in + i, 8);
    std::memcpy(out + n - 8, in + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(out, in, 4);
    std::memcpy(out + n - 4, in + n - 4, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
  }
}

inline TableKey make_table_key(std::string_view user, const Limit& limit, std::uint64_t seed) {
  TableKey key;
  std::memset(key.bytes.data(), 0, key.bytes.size());  // a fixed size: a few stores, no call
  key.user = user;
  const auto l = static_cast<std::uint64_t>(limit.limit());
  const auto p = static_cast<std::uint64_t>(limit.period());
  const auto b = static_cast<std::uint64_t>(limit.burst());
  // Written at offset 1 (after the image's size byte); moved to 0 below for a long key.
  char* prefix = key.bytes.data() + 1;
  std::size_t n = key_detail::put_varint(prefix, l);
  n += key_detail::put_varint(prefix + n, p);
  n += key_detail::put_varint(prefix + n, b);
  key.prefix_size = static_cast<std::uint8_t>(n);
  key.size = n + user.size();
  if (key.is_inline()) {
    key.bytes[0] = static_cast<char>(key.size);
    copy_short(prefix + n, user.data(), user.size());
  } else {
    std::memmove(key.bytes.data(), prefix, n);
  }
  // From the caller's bytes, not from the image just written: reading those stores back at once
  // would stall on store forwarding.
  key.hash = hash_bytes(user.data(), user.size(), key_detail::numbers_seed(seed, l, p, b));
  return key;
}

// The limit numbers (limit, period, burst) at the head of a stored key (prefix + user bytes);
// returns the prefix's length.
inline std::size_t read_limit_numbers(const char* stored, std::size_t n,
                                      std::uint64_t (&numbers)[3]) {
  const char* end = stored + n;
  const char* p = stored;
  for (std::uint64_t& v : numbers) p += key_detail::get_varint(p, end, v);
  return static_cast<std::size_t>(p - stored);
}

// The hash make_table_key gave the key stored as these `n` bytes (prefix + user bytes).
inline std::uint64_t hash_stored_key(const char* stored, std::size_t n, std::uint64_t seed) {
  std::uint64_t numbers[3];
  const std::size_t prefix = read_limit_numbers(stored, n, numbers);
  return hash_bytes(stored + prefix, n - prefix,
                    key_detail::numbers_seed(seed, numbers[0], numbers[1], numbers[2]));
}

}  // namespace spillway::memory
