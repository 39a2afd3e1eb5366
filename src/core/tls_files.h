// A TLS context's files (certificate chain, private key, CA bundle) loaded with errors that name
// the file and say what is wrong (a key that is not the certificate's, else OpenSSL's reason).
// Shared by the Redis client's contexts (src/redis/tls.cc) and the server's listeners
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

// The certificate chain of `cert` and the private key of `key` into `context`; `mismatch` ends
// the error of a key that is not the certificate's ("<key> does not match …").
inline Result<void> use_certificate_and_key(boost::asio::ssl::context& context,
                                            const NamedFile& cert, const NamedFile& key,
                                            std::string_view mismatch) {
  boost::system::error_code ec;
  if (context.use_certificate_chain_file(cert.path, ec); ec) {
    return invalid_argument(cert.named + ": cannot load the certificate: " + openssl_reason(ec));
  }
  if (context.use_private_key_file(key.path, boost::asio::ssl::context::pem, ec); ec) {
    const std::string why = openssl_reason(ec);
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
    return invalid_argument(ca.named + ": cannot load CA certificates: " + openssl_reason(ec));
  }
  return {};
}

}  // namespace spillway::tls_files
