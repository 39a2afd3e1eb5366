// The TLS handshake of one client connection (rediss://): what is set on the connection before
// it (SNI, the name the server's certificate must carry), and a failed handshake in words.
//
// Thread safety: both functions act on one connection's SSL object, on the thread that owns that
// connection (the Client's I/O thread). Ownership: `ssl` stays the caller's.
#pragma once

#include <openssl/ssl.h>

#include <boost/system/error_code.hpp>
#include <string>

namespace spillway::redis {

// Sends `name` as SNI when it is a host name (SNI takes no IP address) and, unless `insecure`,
// makes OpenSSL check during the handshake that the certificate names it (a DNS name, or an IP
// SAN for an address), so that a mismatch is reported as such.
void prepare_tls_client(SSL* ssl, const std::string& name, bool insecure);

// Why the handshake failed: the certificate check's verdict when there is one ("certificate has
// expired", "hostname mismatch"), else OpenSSL's reason, with a hint when the port speaks plain
// TCP.
std::string tls_failure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace spillway::redis
