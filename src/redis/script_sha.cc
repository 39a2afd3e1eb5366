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

}  // namespace

const std::string& script_sha(Algorithm algorithm) {
  static const std::array<std::string, kAlgorithmCount> digests = [] {
    std::array<std::string, kAlgorithmCount> out;
    for (Algorithm a : kAlgorithms) out[algorithm_index(a)] = sha1_hex(script_source(a));
    return out;
  }();
  return digests[algorithm_index(algorithm)];
}

const std::string& all_or_nothing_script_sha() {
  static const std::string digest = sha1_hex(all_or_nothing_script_source());
  return digest;
}

const std::string& refund_script_sha() {
  static const std::string digest = sha1_hex(refund_script_source());
  return digest;
}

const std::string& tenant_write_script_sha() {
  static const std::string digest = sha1_hex(tenant_write_script_source());
  return digest;
}

const std::string& tenant_read_script_sha() {
  static const std::string digest = sha1_hex(tenant_read_script_source());
  return digest;
}

const std::string& reset_script_sha() {
  static const std::string digest = sha1_hex(reset_script_source());
  return digest;
}

const std::string& tenant_scan_script_sha() {
  static const std::string digest = sha1_hex(tenant_scan_script_source());
  return digest;
}

}  // namespace spillway::redis
