// The Redis key names of src/redis/storage_key.h: digested by default (the prefix, then the digest
// as the whole hash tag: no caller value and no limit readable), readable with KeyHash::kNone
// (the format spillway always wrote), and distinct for distinct limits and keys either way.
#include "src/redis/storage_key.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "src/redis/key_slot.h"

namespace spillway::redis {
namespace {

KeyDigest digest_of(KeyHash hash, std::string secret = "") {
  return *KeyDigest::make({.hash = hash, .secret = std::move(secret)});
}

Limit gcra(std::int64_t limit, Micros period) {
  return *Limit::make(Algorithm::kGcra, limit, period);
}

TEST(StorageKey, DigestedIsThePrefixAndTheDigestOfLimitAndKeyAsTheHashTag) {
  const std::string key = storage_key("spillway", digest_of(KeyHash::kSha256), "user:0000000",
                                      *Limit::make(Algorithm::kGcra, 100, kMicrosPerHour, 100));
  // SHA-256("gcra:100:3600000000:100:user:0000000"), 128 bits, base64url.
  EXPECT_EQ(key, "spillway:{g5s4UetvmJcVtz19RDoiqg}");
  EXPECT_EQ(hash_tag(key), "g5s4UetvmJcVtz19RDoiqg");
  EXPECT_EQ(key.find("user"), std::string::npos);
}

TEST(StorageKey, NoneIsTheReadableFormat) {
  EXPECT_EQ(storage_key("spillway", digest_of(KeyHash::kNone), "user:0000000",
                        *Limit::make(Algorithm::kGcra, 100, kMicrosPerHour, 100)),
            "spillway:gcra:100:3600000000:100:{user:0000000}");
}

TEST(StorageKey, TheSecretChangesTheName) {
  const Limit limit = gcra(10, kMicrosPerMinute);
  EXPECT_NE(storage_key("p", digest_of(KeyHash::kHmacSha256, std::string(16, 'a')), "k", limit),
            storage_key("p", digest_of(KeyHash::kHmacSha256, std::string(16, 'b')), "k", limit));
  EXPECT_NE(storage_key("p", digest_of(KeyHash::kHmacSha256, std::string(16, 'a')), "k", limit),
            storage_key("p", digest_of(KeyHash::kSha256), "k", limit));
}

// Two (limit, key) pairs never share a name, in either form (a shared name would be a shared
// counter): for any keys and limits that differ in anything.
RC_GTEST_PROP(StorageKey, DistinctPairsHaveDistinctNames,
              (const std::string& key_a, const std::string& key_b, std::uint16_t limit_a,
               std::uint16_t limit_b, bool fixed_window)) {
  const Limit a = gcra(limit_a % 1000 + 1, kMicrosPerMinute);
  const Limit b = *Limit::make(fixed_window ? Algorithm::kFixedWindow : Algorithm::kGcra,
                               limit_b % 1000 + 1, kMicrosPerMinute);
  const bool same = key_a == key_b && a == b;
  for (KeyHash hash : {KeyHash::kSha256, KeyHash::kNone}) {
    const KeyDigest digest = digest_of(hash);
    RC_ASSERT((storage_key("spillway", digest, key_a, a) ==
               storage_key("spillway", digest, key_b, b)) == same);
  }
}

}  // namespace
}  // namespace spillway::redis
