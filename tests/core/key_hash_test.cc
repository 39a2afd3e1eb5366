// Key digests (spillway/key_hash.h): SHA-256 and HMAC-SHA-256 against published vectors (FIPS
// 180-2's "abc", RFC 4231's test cases 1 and 6), truncated to 128 bits in base64url; the options'
// errors; and, for any bytes, 22 characters of the base64url alphabet.
#include "spillway/key_hash.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace spillway {
namespace {

KeyDigest make(KeyHash hash, std::string secret = "") {
  Result<KeyDigest> digest = KeyDigest::make({.hash = hash, .secret = std::move(secret)});
  EXPECT_TRUE(digest.has_value()) << digest.error().message;
  return *digest;
}

TEST(KeyHash, Sha256IsTheFirst128BitsInBase64Url) {
  // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 ...
  EXPECT_EQ(make(KeyHash::kSha256).of("abc"), "ungWv48Bz-pBQUDeXa4iIw");
  EXPECT_EQ(make(KeyHash::kSha256).of(""), "47DEQpj8HBSa-_TImW-5JA");
}

TEST(KeyHash, HmacSha256MatchesRfc4231) {
  // Test case 1: a 20-byte key of 0x0b; b0344c61 d8db3853 5ca8afce af0bf12b ...
  EXPECT_EQ(make(KeyHash::kHmacSha256, std::string(20, '\x0b')).of("Hi There"),
            "sDRMYdjbOFNcqK_OrwvxKw");
  // Test case 6: a 131-byte key (longer than the block: hashed first); 60e43159 1ee0b67f ...
  EXPECT_EQ(make(KeyHash::kHmacSha256, std::string(131, '\xaa'))
                .of("Test Using Larger Than Block-Size Key - Hash Key First"),
            "YOQxWR7gtn8Niiaqy_W3fw");
}

TEST(KeyHash, TheSecretChangesEveryDigestAndNoneKeepsTheBytes) {
  const std::string key = "gateway:7:sk-live";
  const std::string a = make(KeyHash::kHmacSha256, std::string(16, 'a')).of(key);
  const std::string b = make(KeyHash::kHmacSha256, std::string(16, 'b')).of(key);
  EXPECT_NE(a, b);
  EXPECT_NE(a, make(KeyHash::kSha256).of(key));
  EXPECT_EQ(make(KeyHash::kNone).of(key), key);
}

TEST(KeyHash, OptionsThatWouldMisleadAreErrorsNamingTheSecret) {
  const Result<KeyDigest> short_secret =
      KeyDigest::make({.hash = KeyHash::kHmacSha256, .secret = std::string(15, 's')});
  ASSERT_FALSE(short_secret.has_value());
  EXPECT_EQ(short_secret.error().field, "key_secret");
  EXPECT_EQ(short_secret.error().message, "the key secret must be at least 16 bytes, got 15");
  for (KeyHash hash : {KeyHash::kSha256, KeyHash::kNone}) {
    const Result<KeyDigest> unused = KeyDigest::make({.hash = hash, .secret = "a secret of 20 b."});
    ASSERT_FALSE(unused.has_value());
    EXPECT_EQ(unused.error().field, "key_secret");
    EXPECT_NE(unused.error().message.find("only used with key_hash hmac-sha256"), std::string::npos)
        << unused.error().message;
  }
}

TEST(KeyHash, NamesRoundTrip) {
  for (KeyHash hash : {KeyHash::kSha256, KeyHash::kHmacSha256, KeyHash::kNone}) {
    EXPECT_EQ(parse_key_hash(key_hash_name(hash)), hash);
  }
  EXPECT_EQ(parse_key_hash("SHA256"), std::nullopt);
  EXPECT_EQ(parse_key_hash("md5"), std::nullopt);
}

RC_GTEST_PROP(KeyHash, AnyBytesGive22Base64UrlCharactersAndNoBrace, (const std::string& bytes)) {
  for (const KeyDigest& digest :
       {make(KeyHash::kSha256), make(KeyHash::kHmacSha256, "0123456789abcdef")}) {
    const std::string out = digest.of(bytes);
    RC_ASSERT(out.size() == KeyDigest::kChars);
    for (const char c : out) {
      RC_ASSERT((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_');
    }
    // Appending adds exactly the digest after what is there.
    std::string appended = "prefix:";
    digest.append(appended, bytes);
    RC_ASSERT(appended == "prefix:" + out);
  }
}

// Threads share one KeyDigest (each hashes in its own context): the same answers as one thread.
TEST(KeyHash, ThreadsShareOneDigest) {
  const KeyDigest digest = make(KeyHash::kHmacSha256, std::string(32, 'k'));
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) expected.push_back(digest.of("key-" + std::to_string(i)));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 200; ++i) {
          if (digest.of("key-" + std::to_string(i)) != expected[i]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace spillway
