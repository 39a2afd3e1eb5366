// ServerTls (see server_tls.h).
#include "src/server/server_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <utility>

#include "src/core/text.h"
#include "src/core/tls_files.h"

namespace spillway::server {
namespace {

namespace ssl = boost::asio::ssl;

tls_files::NamedFile named(std::string_view field, const std::string& path) {
  return {path, std::string(field) + " " + quote_for_error(path)};
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
  if (auto loaded = tls_files::use_certificate_and_key(
          *context, named("cert_file", files.cert_file), named("key_file", files.key_file),
          "does not match the certificate of cert_file");
      !loaded) {
    return std::unexpected(loaded.error());
  }
  if (!files.client_ca_file.empty()) {
    if (auto loaded =
            tls_files::load_verify_file(*context, named("client_ca_file", files.client_ca_file));
        !loaded) {
      return std::unexpected(loaded.error());
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
