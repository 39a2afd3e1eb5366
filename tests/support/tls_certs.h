// Certificates and keys (PEM files) for TLS tests: a test CA, a server certificate for
// 127.0.0.1 / localhost, a client certificate for mutual TLS, and the broken kinds a client must
// refuse (another CA, a certificate for another host name, an expired one). All keys are EC
// P-256. They are made once per process with the `openssl` command line in a fresh temporary
// directory, which is removed when the process exits normally.
//
// Validity: the good certificates are valid from one hour ago for 3650 days; the expired one was
// valid from two days ago to one day ago.
//
// Thread safety: tls_files() may be called from any thread; the first call generates the files
// (about 0.1 s), later calls return the same object.
#pragma once

#include <string>

namespace spillway::testing {

// Absolute paths of PEM files, all in `dir`.
struct TlsFiles {
  std::string dir;              // the temporary directory holding everything below
  std::string ca_cert, ca_key;  // a self-signed test CA ("spillway test CA")
  // Signed by the CA; subjectAltName DNS:localhost, IP:127.0.0.1; CN localhost; extended key
  // usage serverAuth and clientAuth (redis-server also presents its certificate as a client).
  std::string server_cert, server_key;
  // Signed by the CA; CN "spillway test client", extended key usage clientAuth: mutual TLS.
  std::string client_cert, client_key;
  // An unrelated self-signed CA: a client trusting only it must refuse the server.
  std::string other_ca_cert;
  // Signed by the CA; subjectAltName DNS:wrong.example only (no IP), CN wrong.example.
  std::string wrong_host_cert, wrong_host_key;
  // Signed by the CA with the server certificate's names, but notAfter is in the past.
  std::string expired_cert, expired_key;
};

// Generates the files on first use (function-local static). Throws std::runtime_error with the
// failing openssl command and its output when a step fails (e.g. no openssl in PATH).
const TlsFiles& tls_files();

}  // namespace spillway::testing
