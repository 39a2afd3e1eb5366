// TLS on spillway's own HTTP listeners (server.tls, docs/SPEC.md §5): the OpenSSL server context
// made from a certificate chain, its key and, for mutual TLS, the CAs a client certificate must
// chain to; TLS 1.2 or newer. reload() reads the files again (SIGHUP): connections accepted after
// it use the new context, those already open keep theirs; a file that does not load keeps the
// context in force.
//
// Thread safety: every method from any thread. Ownership: listeners share one ServerTls by
// shared_ptr; each connection keeps the context it was accepted with for its lifetime.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <string>

#include "spillway/error.h"
#include "src/config/config.h"

namespace spillway::server {

// The files: the certificate chain, its key and (mutual TLS) the client CAs.
using ServerTlsFiles = policy::ServerTlsConfig;

class ServerTls {
 public:
  // Errors (kInvalidArgument) name the field of server.tls (cert_file…), the file and OpenSSL's
  // reason: unreadable, not PEM, a key that does not match the certificate.
  static Result<std::shared_ptr<ServerTls>> make(ServerTlsFiles files);

  // Loads the files again; on an error the context in force stays.
  Result<void> reload();
  std::shared_ptr<boost::asio::ssl::context> current() const;
  const ServerTlsFiles& files() const { return files_; }

  explicit ServerTls(ServerTlsFiles files, std::shared_ptr<boost::asio::ssl::context> context)
      : files_(std::move(files)), context_(std::move(context)) {}

 private:
  const ServerTlsFiles files_;
  mutable std::mutex mutex_;  // guards context_
  std::shared_ptr<boost::asio::ssl::context> context_;
};

// The context alone (what make() and reload() load).
Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const ServerTlsFiles& files);

}  // namespace spillway::server
