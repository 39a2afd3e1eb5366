// Starts a real redis-server for a test on a free loopback port (and a unix socket), and stops
// it when destroyed. If redis-server cannot start, construction fails the test: nothing is
// silently skipped.
//
// TLS mode (the RedisServer::Tls constructor): the server listens with TLS only, on port() (its
// "tls-port"; "port 0": no plain TCP port, and no unix socket either, since Redis serves unix
// sockets without TLS), with the certificates of tests/support/tls_certs.h.
//
// Thread safety: none; use an object from one thread at a time. Timeouts are in seconds (5 s to
// start). The server is a ChildProcess (tests/support/child_process.h): it gets SIGKILL when the
// thread that started it exits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tests/support/child_process.h"

namespace spillway::testing {

class RedisServer {
 public:
  // extra_config: more redis.conf lines (e.g. "requirepass secret"). port 0: a free one.
  explicit RedisServer(const std::string& extra_config = "", std::uint16_t port = 0);

  // TLS only: "port 0", "tls-port <port>", tls-cert-file / tls-key-file, tls-ca-cert-file
  // tls_files().ca_cert, and "tls-auth-clients yes" or "no".
  struct Tls {
    // "tls-auth-clients yes": a client must present a certificate signed by the test CA
    // (tls_files().client_cert); "no": clients send none.
    bool require_client_cert = false;
    // The server's certificate and key; empty: tls_files().server_cert and server_key. A test
    // may pass tls_files().expired_cert / expired_key or wrong_host_cert / wrong_host_key.
    std::string cert_file, key_file;
  };
  // E.g. RedisServer server(RedisServer::Tls{.require_client_cert = true});
  explicit RedisServer(const Tls& tls, const std::string& extra_config = "",
                       std::uint16_t port = 0);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::uint16_t port() const { return port_; }  // in TLS mode the TLS port
  // Empty in TLS mode (no unix socket).
  const std::string& unix_socket() const { return socket_; }
  // "redis://127.0.0.1:PORT", or in TLS mode "rediss://127.0.0.1:PORT?" + tls_url_query().
  std::string url() const;

  bool tls() const { return tls_.has_value(); }
  // TLS mode only (throws std::runtime_error otherwise): "tls_ca_file=<tls_files().ca_cert>",
  // plus "&tls_cert_file=<client cert>&tls_key_file=<client key>" when client certificates are
  // required. Paths are percent-encoded (a no-op for the usual temp paths: [A-Za-z0-9/._~-]).
  std::string tls_url_query() const;

  // Kills the server (SIGKILL) and starts it again on the same port and socket (data is lost).
  void restart();
  void stop();   // SIGKILL; the port stays reserved for start()
  void start();  // starts it again after stop()

  // Runs `redis-cli -p PORT args...` and returns its stdout (for checks such as TTL and SCAN).
  // In TLS mode with --tls, --cacert (the test CA), --cert / --key (the client certificate), and
  // --insecure when the server's certificate is not tls_files().server_cert (an expired one).
  std::string cli(const std::string& args) const;

  bool running() const { return process_.has_value(); }
  // What redis-server wrote to stdout and stderr so far (for failure messages).
  std::string log() const;

  // SIGSTOP / SIGCONT: the server keeps its connections but answers nothing meanwhile.
  void pause();
  void resume();

 private:
  void create(std::uint16_t port);
  void remove_dir();
  // The redis-cli command line up to the command's arguments.
  std::string cli_prefix() const;
  bool ready(std::string& last_answer) const;

  std::optional<Tls> tls_;  // cert_file and key_file filled in
  std::string dir_;
  std::string socket_;
  std::string extra_config_;
  std::uint16_t port_ = 0;
  std::optional<ChildProcess> process_;  // while started
};

}  // namespace spillway::testing
