// ServerTls (see server_tls.h).
#include "src/server/server_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <utility>

#include "src/core/text.h"

namespace spillway::server {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reason for the last failure, or the error_code's text.
std::string openssl_reason(const boost::system::error_code& ec) {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code != 0) {
    if (const char* text = ERR_reason_error_string(code)) return text;
  }
  return ec.message();
}

std::string field_file(std::string_view field, const std::string& path) {
  return std::string(field) + " " + quote_for_error(path);
}

}  // namespace

Result<std::shared_ptr<ssl::context>> make_server_tls_context(const ServerTlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return invalid_argument("needs cert_file and key_file");
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  if (context->use_certificate_chain_file(files.cert_file, ec); ec) {
    return invalid_argument(field_file("cert_file", files.cert_file) +
                            ": cannot load the certificate: " + openssl_reason(ec));
  }
  if (context->use_private_key_file(files.key_file, ssl::context::pem, ec); ec) {
    const std::string why = openssl_reason(ec);
    if (why.find("mismatch") != std::string::npos) {
      return invalid_argument(field_file("key_file", files.key_file) +
                              " does not match the certificate of cert_file");
    }
    return invalid_argument(field_file("key_file", files.key_file) +
                            ": cannot load the private key: " + why);
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    ERR_clear_error();
    return invalid_argument(field_file("key_file", files.key_file) +
                            " does not match the certificate of cert_file");
  }
  if (!files.client_ca_file.empty()) {
    if (context->load_verify_file(files.client_ca_file, ec); ec) {
      return invalid_argument(field_file("client_ca_file", files.client_ca_file) +
                              ": cannot load CA certificates: " + openssl_reason(ec));
    }
    // The CAs named to the client in the handshake (which certificate to send).
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(context->native_handle(), names);
    }
    ERR_clear_error();
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
  } else {
    context->set_verify_mode(ssl::verify_none, ec);
  }
  return context;
}

Result<std::shared_ptr<ServerTls>> ServerTls::make(ServerTlsFiles files) {
  auto context = make_server_tls_context(files);
  if (!context) return std::unexpected(context.error());
  return std::make_shared<ServerTls>(std::move(files), std::move(*context));
}

Result<void> ServerTls::reload() {
  auto context = make_server_tls_context(files_);
  if (!context) return std::unexpected(context.error());
  const std::lock_guard lock(mutex_);
  context_ = std::move(*context);
  return {};
}

std::shared_ptr<ssl::context> ServerTls::current() const {
  const std::lock_guard lock(mutex_);
  return context_;
}

}  // namespace spillway::server
