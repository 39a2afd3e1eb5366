// How a shared backend names a caller's state: the keys carry callers' attribute values (API keys,
// IP addresses), and whoever can read the backend (KEYS, MONITOR, a backup, a replica) reads its
// key names. By default they are digests, so those values never reach the backend in clear.
//   kSha256:     SHA-256 of the key, truncated to 128 bits (22 base64url characters). Hides API
//                keys; an IP address (2^32 candidates) can still be found by trying them all.
//   kHmacSha256: HMAC-SHA-256 with a secret, truncated the same way: without the secret, nothing
//                can be tried. The secret is at least kMinKeySecretBytes bytes.
//   kNone:       the key in clear, as spillway wrote keys before (readable, and longer).
// With 128 bits, two of 10^9 keys share a digest with a probability of about 10^-21.
// Changing the mode (or the secret) changes every key name: counters start again once.
// KeyHashOptions is a plain value. A KeyDigest is immutable after make(); append() and of() may be
// called from any thread (each thread hashes in its own context); copies share the precomputed
// HMAC state.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway {

enum class KeyHash { kSha256, kHmacSha256, kNone };

inline constexpr std::size_t kMinKeySecretBytes = 16;

struct KeyHashOptions {
  KeyHash hash = KeyHash::kSha256;
  std::string secret;  // the HMAC key's bytes, for kHmacSha256 only
  bool operator==(const KeyHashOptions&) const = default;
};

// "sha256", "hmac-sha256", "none"; and back (nullopt for another word).
std::string_view key_hash_name(KeyHash hash);
std::optional<KeyHash> parse_key_hash(std::string_view name);

// The digest that stands for a key in a backend's key names: 128 bits of SHA-256 or HMAC-SHA-256
// (OpenSSL), written as kChars base64url characters ('A'-'Z', 'a'-'z', '0'-'9', '-', '_': never
// '{' or '}', so a digest inside a Redis Cluster hash tag is the whole tag).
class KeyDigest {
 public:
  static constexpr std::size_t kChars = 22;

  // Errors (kInvalidArgument, field "key_secret"): kHmacSha256 with a secret shorter than
  // kMinKeySecretBytes, or a secret with another mode (it would be silently ignored).
  static Result<KeyDigest> make(const KeyHashOptions& options);

  KeyHash hash() const { return hash_; }
  // Appends the kChars-character digest of `bytes` to `out`; with KeyHash::kNone, the bytes.
  void append(std::string& out, std::string_view bytes) const;
  std::string of(std::string_view bytes) const {
    std::string out;
    append(out, bytes);
    return out;
  }

 private:
  struct Pads;  // HMAC's inner and outer SHA-256 states after the padded secret
  KeyDigest(KeyHash hash, std::shared_ptr<const Pads> pads) : hash_(hash), pads_(std::move(pads)) {}

  KeyHash hash_;
  std::shared_ptr<const Pads> pads_;  // kHmacSha256 only
};

}  // namespace spillway
