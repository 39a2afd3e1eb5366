#include <array>
#include <boost/uuid/detail/sha1.hpp>
#include <cstdio>

#include "src/redis/scripts.h"

namespace spillway::redis {
namespace {

std::string sha1_hex(std::string_view text) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(text.data(), text.size());
  boost::uuids::detail::sha1::digest_type digest;
  sha.get_digest(digest);
  std::string hex;
  for (unsigned int word : digest) {
    char chunk[9];
    std::snprintf(chunk, sizeof(chunk), "%08x", word);
    hex += chunk;
  }
  return hex;
}

// The SHA-1 of a standalone script, computed once (one static per script).
template <std::string_view (*Source)()>
const std::string& sha_of() {
  static const std::string digest = sha1_hex(Source());
  return digest;
}

}  // namespace

const std::string& script_sha(Algorithm algorithm) {
  static const std::array<std::string, kAlgorithmCount> digests = [] {
    std::array<std::string, kAlgorithmCount> out;
    for (Algorithm a : kAlgorithms) out[algorithm_index(a)] = sha1_hex(script_source(a));
    return out;
  }();
  return digests[algorithm_index(algorithm)];
}

const std::string& all_or_nothing_script_sha() { return sha_of<all_or_nothing_script_source>(); }
const std::string& refund_script_sha() { return sha_of<refund_script_source>(); }
const std::string& settle_script_sha() { return sha_of<settle_script_source>(); }
const std::string& reset_script_sha() { return sha_of<reset_script_source>(); }
const std::string& probe_script_sha() { return sha_of<probe_script_source>(); }
const std::string& tenant_write_script_sha() { return sha_of<tenant_write_script_source>(); }
const std::string& tenant_read_script_sha() { return sha_of<tenant_read_script_source>(); }
const std::string& tenant_scan_script_sha() { return sha_of<tenant_scan_script_source>(); }
const std::string& quota_share_script_sha() { return sha_of<quota_share_script_source>(); }

}  // namespace spillway::redis
