// TLS settings of a connection to the backend (rediss://, rediss+cluster://): the one type the
// config file's backend.tls section is read into, RedisStoreOptions holds and the Redis client
// connects with. A plain value; copy it freely.
#pragma once

#include <string>

namespace spillway {

// The same names, prefixed "tls_", are URL query parameters
// (rediss://host:6380/0?tls_ca_file=/etc/ca.pem&tls_server_name=redis.internal); a parameter in
// the URL wins over the field here.
struct TlsOptions {
  std::string ca_file;      // PEM file of trusted CAs; empty: the system's trust store
  std::string cert_file;    // client certificate chain (PEM), for mutual TLS; with key_file
  std::string key_file;     // its private key (PEM)
  std::string server_name;  // SNI and the name the certificate must carry; empty: the URL's host
  bool insecure = false;    // no certificate verification at all: for tests only
  bool operator==(const TlsOptions&) const = default;
};

}  // namespace spillway
