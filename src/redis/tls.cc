// make_tls_context (see tls.h): one OpenSSL client context per Client, TLS 1.2 or newer.
#include "src/redis/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace spillway::redis {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reason for the last failure ("no such file", "key values mismatch"…), or the
// error_code's text.
std::string reason(const boost::system::error_code& ec) {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code != 0) {
    const char* text = ERR_reason_error_string(code);
    if (text != nullptr) return text;
  }
  return ec.message();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> make_tls_context(const TlsOptions& options) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!options.ca_file.empty()) {
    if (context->load_verify_file(options.ca_file, ec); ec) {
      return invalid_argument("tls_ca_file '" + options.ca_file +
                              "': cannot load CA certificates: " + reason(ec));
    }
  } else if (context->set_default_verify_paths(ec); ec) {
    return invalid_argument("TLS: cannot load the system's trusted certificates: " + reason(ec));
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return invalid_argument(
        "TLS: tls_cert_file and tls_key_file go together (mutual TLS needs both)");
  }
  if (!options.cert_file.empty()) {
    if (context->use_certificate_chain_file(options.cert_file, ec); ec) {
      return invalid_argument("tls_cert_file '" + options.cert_file +
                              "': cannot load the certificate: " + reason(ec));
    }
    if (context->use_private_key_file(options.key_file, ssl::context::pem, ec); ec) {
      const std::string why = reason(ec);
      if (why.find("mismatch") != std::string::npos) {
        return invalid_argument("tls_key_file '" + options.key_file +
                                "' does not match tls_cert_file '" + options.cert_file + "'");
      }
      return invalid_argument("tls_key_file '" + options.key_file +
                              "': cannot load the private key: " + why);
    }
    if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
      ERR_clear_error();
      return invalid_argument("tls_key_file '" + options.key_file +
                              "' does not match tls_cert_file '" + options.cert_file + "'");
    }
  }
  context->set_verify_mode(options.insecure ? ssl::verify_none : ssl::verify_peer, ec);
  return context;
}

}  // namespace spillway::redis
