// A TLS context's files (certificate chain, private key, CA bundle) loaded with errors that say
// what is wrong with the file: one that cannot be read (the system's words), a directory, one
// with no PEM block in it, a key that is not the certificate's, else OpenSSL's reason. Shared by
// the Redis client's contexts (src/redis/tls.cc) and the server's listeners
// (src/server/server_tls.cc), which word the files' names their own way (`tls_cert_file '…'`,
// `cert_file "…"`).
//
// Header-only: the core library links no libssl; whoever includes this links OpenSSL::SSL.
// Not thread-safe on one context (OpenSSL's error queue is per thread).
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::tls_files {

// A file as an error names it: its path, and the words that start the error ("cert_file \"a\"").
struct NamedFile {
  const std::string& path;
  std::string named;
};

// OpenSSL's reason for the last failure, or the error_code's text; empties OpenSSL's error queue.
inline std::string openssl_reason(const boost::system::error_code& ec) {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code != 0) {
    if (const char* text = ERR_reason_error_string(code)) return text;
  }
  return ec.message();
}

// What a file must hold: its PEM blocks' label ends with `label` ("CERTIFICATE", "PRIVATE KEY":
// an RSA, EC or encrypted key's labels end so too), said as `what` in an error.
struct PemKind {
  std::string_view label;
  std::string_view what;
};
inline constexpr PemKind kCertificate{"CERTIFICATE", "certificate"};
inline constexpr PemKind kPrivateKey{"PRIVATE KEY", "private key"};

// Why `path` cannot hold a `kind` PEM block, before OpenSSL reads it (whose words would be "PEM
// lib" or "system lib"): it cannot be read, it is a directory, it is empty, no "-----BEGIN "
// stands in its first 4 MiB, or its blocks are of another kind. nullopt when it may hold one.
inline std::optional<std::string> pem_file_problem(const std::string& path, PemKind kind) {
  std::error_code unused;
  if (std::filesystem::is_directory(path, unused)) return "it is a directory";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("cannot read it: ") + std::strerror(errno);
  constexpr std::size_t kLook = 4 << 20;
  std::string head(kLook, '\0');
  in.read(head.data(), static_cast<std::streamsize>(kLook));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.empty()) return "it is empty";
  if (head.find("-----BEGIN ") == std::string::npos) return "no PEM block (-----BEGIN …) in it";
  if (head.find(std::string(kind.label) + "-----") == std::string::npos) {
    return "no " + std::string(kind.what) + " in it (its PEM blocks are of another kind)";
  }
  return std::nullopt;
}

// Why loading `path` as `kind` failed: the file's own problem, else OpenSSL's reason.
inline std::string load_failure(const std::string& path, PemKind kind,
                                const boost::system::error_code& ec) {
  if (std::optional<std::string> problem = pem_file_problem(path, kind)) {
    ERR_clear_error();
    return *problem;
  }
  return openssl_reason(ec);
}

// The certificate chain of `cert` and the private key of `key` into `context`; `mismatch` ends
// the error of a key that is not the certificate's ("<key> does not match …").
inline Result<void> use_certificate_and_key(boost::asio::ssl::context& context,
                                            const NamedFile& cert, const NamedFile& key,
                                            std::string_view mismatch) {
  boost::system::error_code ec;
  if (context.use_certificate_chain_file(cert.path, ec); ec) {
    return invalid_argument(
        cert.named + ": cannot load the certificate: " + load_failure(cert.path, kCertificate, ec));
  }
  if (context.use_private_key_file(key.path, boost::asio::ssl::context::pem, ec); ec) {
    const std::string why = load_failure(key.path, kPrivateKey, ec);
    if (why.find("mismatch") != std::string::npos) {
      return invalid_argument(key.named + " " + std::string(mismatch));
    }
    return invalid_argument(key.named + ": cannot load the private key: " + why);
  }
  if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
    ERR_clear_error();
    return invalid_argument(key.named + " " + std::string(mismatch));
  }
  return {};
}

// The CA certificates of `ca` as the ones `context` trusts.
inline Result<void> load_verify_file(boost::asio::ssl::context& context, const NamedFile& ca) {
  boost::system::error_code ec;
  if (context.load_verify_file(ca.path, ec); ec) {
    return invalid_argument(
        ca.named + ": cannot load CA certificates: " + load_failure(ca.path, kCertificate, ec));
  }
  return {};
}

}  // namespace spillway::tls_files
