#include "spillway/key_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/core/text.h"

namespace spillway {
namespace {

constexpr std::size_t kBlockBytes = 64;  // SHA-256's block, HMAC's key size
constexpr std::size_t kSha256Bytes = 32;

// SHA-256, fetched once for the process (EVP_sha256() would fetch it again at every init).
const EVP_MD* sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

struct CtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Ctx = std::unique_ptr<EVP_MD_CTX, CtxFree>;

// This thread's hashing context, reused from call to call.
EVP_MD_CTX* thread_ctx() {
  thread_local Ctx ctx(EVP_MD_CTX_new());
  return ctx.get();
}

// OpenSSL failing once make() has hashed its known answer (below) is a broken process (no
// memory for a context): stop, rather than name keys after whatever the buffer held, which would
// give every request a counter of its own.
void require(bool ok) {
  if (ok) return;
  std::fputs("spillway: OpenSSL's SHA-256 failed while naming a key; stopping\n", stderr);
  std::abort();
}

void digest_once(std::string_view bytes, unsigned char* out) {
  EVP_MD_CTX* ctx = thread_ctx();
  unsigned int size = 0;
  require(ctx != nullptr && EVP_DigestInit_ex2(ctx, sha256(), nullptr) == 1 &&
          EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) == 1 &&
          EVP_DigestFinal_ex(ctx, out, &size) == 1 && size == kSha256Bytes);
}

// SHA-256 of "abc" (FIPS 180-2), its first 16 bytes.
constexpr unsigned char kAbc[16] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                    0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23};

}  // namespace

struct KeyDigest::Pads {
  Ctx inner;  // SHA-256 after (secret ^ 0x36...)
  Ctx outer;  // SHA-256 after (secret ^ 0x5c...)
};

std::string_view key_hash_name(KeyHash hash) {
  switch (hash) {
    case KeyHash::kSha256:
      return "sha256";
    case KeyHash::kHmacSha256:
      return "hmac-sha256";
    case KeyHash::kNone:
      return "none";
  }
  return "none";
}

std::optional<KeyHash> parse_key_hash(std::string_view name) {
  for (KeyHash hash : {KeyHash::kSha256, KeyHash::kHmacSha256, KeyHash::kNone}) {
    if (key_hash_name(hash) == name) return hash;
  }
  return std::nullopt;
}

Result<KeyDigest> KeyDigest::make(const KeyHashOptions& options) {
  if (options.hash != KeyHash::kNone) {
    // A known answer, once: SHA-256 is there and answers right, before any key is named.
    if (sha256() == nullptr || thread_ctx() == nullptr) {
      return std::unexpected(Error{Errc::kInternal, "OpenSSL offers no SHA-256"});
    }
    std::array<unsigned char, kSha256Bytes> abc{};
    digest_once("abc", abc.data());
    if (std::memcmp(abc.data(), kAbc, sizeof kAbc) != 0) {
      return std::unexpected(Error{Errc::kInternal, "OpenSSL's SHA-256 gives wrong answers"});
    }
  }
  if (options.hash != KeyHash::kHmacSha256) {
    if (!options.secret.empty()) {
      return std::unexpected(Error{Errc::kInvalidArgument,
                                   "a key secret is only used with key_hash hmac-sha256, not " +
                                       std::string(key_hash_name(options.hash)),
                                   "key_secret"});
    }
    return KeyDigest(options.hash, nullptr);
  }
  if (options.secret.size() < kMinKeySecretBytes) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "the key secret must be at least " +
                                     std::to_string(kMinKeySecretBytes) + " bytes, got " +
                                     std::to_string(options.secret.size()),
                                 "key_secret"});
  }
  // RFC 2104: a key longer than the block is hashed first; then padded with zeros.
  std::array<unsigned char, kBlockBytes> key{};
  if (options.secret.size() > kBlockBytes) {
    digest_once(options.secret, key.data());
  } else {
    std::memcpy(key.data(), options.secret.data(), options.secret.size());
  }
  auto pads = std::make_shared<Pads>(Pads{Ctx(EVP_MD_CTX_new()), Ctx(EVP_MD_CTX_new())});
  for (auto [ctx, pad] : {std::pair{pads->inner.get(), 0x36}, std::pair{pads->outer.get(), 0x5c}}) {
    std::array<unsigned char, kBlockBytes> block;
    for (std::size_t i = 0; i < kBlockBytes; ++i)
      block[i] = key[i] ^ static_cast<unsigned char>(pad);
    const bool ok = ctx != nullptr && EVP_DigestInit_ex2(ctx, sha256(), nullptr) == 1 &&
                    EVP_DigestUpdate(ctx, block.data(), block.size()) == 1;
    OPENSSL_cleanse(block.data(), block.size());
    if (!ok) {
      OPENSSL_cleanse(key.data(), key.size());
      return std::unexpected(Error{Errc::kInternal, "OpenSSL could not set up HMAC-SHA-256"});
    }
  }
  OPENSSL_cleanse(key.data(), key.size());
  return KeyDigest(KeyHash::kHmacSha256, std::move(pads));
}

void KeyDigest::append(std::string& out, std::string_view bytes) const {
  if (hash_ == KeyHash::kNone) {
    out.append(bytes);
    return;
  }
  std::array<unsigned char, kSha256Bytes> digest;
  if (hash_ == KeyHash::kSha256) {
    digest_once(bytes, digest.data());
  } else {
    EVP_MD_CTX* ctx = thread_ctx();
    unsigned int size = 0;
    require(ctx != nullptr && EVP_MD_CTX_copy_ex(ctx, pads_->inner.get()) == 1 &&
            EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) == 1 &&
            EVP_DigestFinal_ex(ctx, digest.data(), &size) == 1 && size == kSha256Bytes);
    require(EVP_MD_CTX_copy_ex(ctx, pads_->outer.get()) == 1 &&
            EVP_DigestUpdate(ctx, digest.data(), size) == 1 &&
            EVP_DigestFinal_ex(ctx, digest.data(), &size) == 1 && size == kSha256Bytes);
  }
  append_base64url_128(out, digest.data());
}

}  // namespace spillway
