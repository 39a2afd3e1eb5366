// TLS settings of a Redis connection (rediss://) and the OpenSSL context built from them.
//
// Verification is on unless `insecure` is set: the server's certificate must chain to `ca_file`
// (or the system's trust store when it is empty) and name the host we connect to (or
// `server_name`). A client certificate and key make it mutual TLS.
//
// Thread safety: make_tls_context() is a pure function of its files; the context it returns is
// used by one Client's I/O thread.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "spillway/error.h"
#include "spillway/tls_options.h"

namespace spillway::redis {

// Errors (kInvalidArgument) name the setting and the file: a CA file that cannot be read, a
// certificate without its key, a key that does not match the certificate.
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const TlsOptions& options);

}  // namespace spillway::redis
