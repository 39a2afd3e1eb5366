// prepare_tls_client and tls_failure (see tls_handshake.h).
#include "src/redis/tls_handshake.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

namespace spillway::redis {

void prepare_tls_client(SSL* ssl, const std::string& name, bool insecure) {
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(name, not_ip);
  if (not_ip) SSL_set_tlsext_host_name(ssl, name.c_str());  // SNI takes names only
  if (insecure) return;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (not_ip) {
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  }
}

std::string tls_failure(SSL* ssl, const boost::system::error_code& ec) {
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict != X509_V_OK) {
    return std::string("TLS handshake failed: server certificate rejected: ") +
           X509_verify_cert_error_string(verdict);
  }
  std::string text = "TLS handshake failed: " + ec.message();
  if (ec.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER) {
    text += " (is this a plain-TCP port? then use redis://)";
  }
  return text;
}

}  // namespace spillway::redis
