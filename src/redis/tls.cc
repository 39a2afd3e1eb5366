// make_tls_context (see tls.h): one OpenSSL client context per Client, TLS 1.2 or newer.
#include "src/redis/tls.h"

#include <openssl/ssl.h>

#include "src/core/tls_files.h"

namespace spillway::redis {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>> make_tls_context(const TlsOptions& options) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!options.ca_file.empty()) {
    if (auto loaded = tls_files::load_verify_file(
            *context, {options.ca_file, "tls_ca_file '" + options.ca_file + "'"});
        !loaded) {
      return std::unexpected(loaded.error());
    }
  } else if (context->set_default_verify_paths(ec); ec) {
    return invalid_argument("TLS: cannot load the system's trusted certificates: " +
                            tls_files::openssl_reason(ec));
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return invalid_argument(
        "TLS: tls_cert_file and tls_key_file go together (mutual TLS needs both)");
  }
  if (!options.cert_file.empty()) {
    if (auto loaded = tls_files::use_certificate_and_key(
            *context, {options.cert_file, "tls_cert_file '" + options.cert_file + "'"},
            {options.key_file, "tls_key_file '" + options.key_file + "'"},
            "does not match tls_cert_file '" + options.cert_file + "'");
        !loaded) {
      return std::unexpected(loaded.error());
    }
  }
  context->set_verify_mode(options.insecure ? ssl::verify_none : ssl::verify_peer, ec);
  return context;
}

}  // namespace spillway::redis
