// TLS on spillway's own listeners (server.tls, src/server/server_tls.h): `spillway serve` with the
// test certificates (tests/support/tls_certs.h) on the decision and admin listeners, driven with
// curl and `openssl s_client`: answers over TLS, plain HTTP refused, mutual TLS refusing no
// certificate, a certificate of another CA and an expired one; SIGHUP takes new certificate
// files (and keeps the old ones when the new do not load); validate refuses bad files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/tls_certs.h"

namespace spillway {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kTlsListenerToken = "tls-admin-tok-5e8c2a91";

// A directory of one test's files (the config, copies of the certificate and key that a test
// may replace, the token file), removed at the end of the test.
class TlsListenerDir {
 public:
  explicit TlsListenerDir(const std::string& name)
      : dir_("/tmp/spillway_tls_listener_" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    use_certificate(testing::tls_files().server_cert, testing::tls_files().server_key);
    std::ofstream(path("tokens")) << "ops " << kTlsListenerToken << "\n";
    ::chmod(path("tokens").c_str(), 0600);
  }
  ~TlsListenerDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TlsListenerDir(const TlsListenerDir&) = delete;
  TlsListenerDir& operator=(const TlsListenerDir&) = delete;

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // server.crt / server.key: copies of these files (what the config names).
  void use_certificate(const std::string& cert, const std::string& key) const {
    std::filesystem::copy_file(cert, path("server.crt"),
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(key, path("server.key"),
                               std::filesystem::copy_options::overwrite_existing);
    ::chmod(path("server.key").c_str(), 0600);
  }
  std::string config(bool mutual) const {
    const std::string file = path("config.yaml");
    std::ofstream(file) << "server:\n  access_log: false\n  admin_listen: 127.0.0.1:0\n"
                        << "  admin_token_file: " << path("tokens") << "\n"
                        << "  tls:\n    cert_file: " << path("server.crt")
                        << "\n    key_file: " << path("server.key") << "\n"
                        << (mutual ? "    client_ca_file: " + testing::tls_files().ca_cert + "\n"
                                   : std::string())
                        << "layers:\n  - name: gateway\n    key: [api_key]\n    by_plan:\n"
                           "      source: store\n      plans: {free: 3/min}\n      default: free\n";
    return file;
  }

 private:
  std::string dir_;
};

class TlsListenerServer {
 public:
  TlsListenerServer(const TlsListenerDir& dir, bool mutual)
      : process_({"--config", dir.config(mutual)}, dir.path("serve.log")) {}
  bool ready() {
    if (!process_.ready()) return false;
    admin_port_ = process_.admin_port();
    return admin_port_ != 0;
  }
  std::uint16_t port() const { return process_.port(); }
  std::uint16_t admin_port() const { return admin_port_; }
  std::string log() const { return process_.log(); }
  void hangup() const { ::kill(process_.pid(), SIGHUP); }

 private:
  testing::ServeProcess process_;
  std::uint16_t admin_port_ = 0;
};

// curl's exit status and body; `options` go before the URL.
testing::CommandResult tls_listener_curl(const std::string& options, std::uint16_t port,
                                         const std::string& path) {
  return testing::run_command("curl -sS --max-time 20 " + options +
                              " https://127.0.0.1:" + std::to_string(port) + path + " 2>&1");
}

std::string tls_listener_ca() { return "--cacert " + testing::tls_files().ca_cert; }

TEST(TlsListeners, DecisionAndAdminAnswerOverTlsAndRefusePlainHttp) {
  TlsListenerDir dir("plain");
  TlsListenerServer server(dir, false);
  ASSERT_TRUE(server.ready()) << server.log();
  EXPECT_NE(server.log().find("spillway serve: TLS on every listener"), std::string::npos)
      << server.log();
  const testing::CommandResult health =
      tls_listener_curl(tls_listener_ca(), server.port(), "/healthz");
  EXPECT_EQ(health.status, 0) << health.out;
  EXPECT_NE(health.out.find("\"ok\""), std::string::npos) << health.out;
  const testing::CommandResult admin = tls_listener_curl(
      tls_listener_ca() + " -H 'Authorization: Bearer " + std::string(kTlsListenerToken) + "'",
      server.admin_port(), "/v1/tenants");
  EXPECT_EQ(admin.status, 0) << admin.out;
  EXPECT_NE(admin.out.find("\"tenants\""), std::string::npos) << admin.out;
  // The certificate is the server's (openssl s_client verifies it against the test CA).
  const testing::CommandResult shown = testing::run_command(
      "echo | timeout 20 openssl s_client -connect 127.0.0.1:" + std::to_string(server.port()) +
      " -CAfile " + testing::tls_files().ca_cert + " -verify_return_error 2>&1");
  EXPECT_NE(shown.out.find("Verify return code: 0 (ok)"), std::string::npos) << shown.out;
  // Plain HTTP gets no answer: the bytes are not a TLS handshake.
  const testing::CommandResult plain = testing::run_command(
      "curl -sS --max-time 20 http://127.0.0.1:" + std::to_string(server.port()) + "/healthz 2>&1");
  EXPECT_NE(plain.status, 0) << plain.out;
  EXPECT_EQ(plain.out.find("\"ok\""), std::string::npos) << plain.out;
  // ... and the server still answers over TLS.
  EXPECT_EQ(tls_listener_curl(tls_listener_ca(), server.port(), "/healthz").status, 0);
}

TEST(TlsListeners, MutualTlsRefusesNoCertificateAnotherCasAndAnExpiredOne) {
  TlsListenerDir dir("mutual");
  TlsListenerServer server(dir, true);
  ASSERT_TRUE(server.ready()) << server.log();
  const testing::TlsFiles& files = testing::tls_files();
  const std::string good =
      tls_listener_ca() + " --cert " + files.client_cert + " --key " + files.client_key;
  for (const std::uint16_t port : {server.port(), server.admin_port()}) {
    const testing::CommandResult admitted = tls_listener_curl(
        good + " -H 'Authorization: Bearer " + std::string(kTlsListenerToken) + "'", port,
        port == server.port() ? "/healthz" : "/v1/tenants");
    EXPECT_EQ(admitted.status, 0) << port << ": " << admitted.out;
    const testing::CommandResult none = tls_listener_curl(tls_listener_ca(), port, "/healthz");
    EXPECT_NE(none.status, 0) << port << ": " << none.out;
    // The other CA's own certificate: not signed by the client CA.
    const std::string other_key = files.dir + "/other-ca.key";
    const testing::CommandResult other = tls_listener_curl(
        tls_listener_ca() + " --cert " + files.other_ca_cert + " --key " + other_key, port,
        "/healthz");
    EXPECT_NE(other.status, 0) << port << ": " << other.out;
    const testing::CommandResult expired = tls_listener_curl(
        tls_listener_ca() + " --cert " + files.expired_cert + " --key " + files.expired_key, port,
        "/healthz");
    EXPECT_NE(expired.status, 0) << port << ": " << expired.out;
  }
}

TEST(TlsListeners, SighupTakesNewCertificateFilesAndKeepsTheOldOnesWhenTheNewDoNotLoad) {
  TlsListenerDir dir("reload");
  TlsListenerServer server(dir, false);
  ASSERT_TRUE(server.ready()) << server.log();
  ASSERT_EQ(tls_listener_curl(tls_listener_ca(), server.port(), "/healthz").status, 0);
  // A certificate for another host name: a client that checks 127.0.0.1 refuses it after SIGHUP.
  dir.use_certificate(testing::tls_files().wrong_host_cert, testing::tls_files().wrong_host_key);
  server.hangup();
  ASSERT_TRUE(testing::wait_until(
      [&] { return server.log().find("TLS certificate reloaded") != std::string::npos; }, 30s))
      << server.log();
  const testing::CommandResult refused =
      tls_listener_curl(tls_listener_ca(), server.port(), "/healthz");
  EXPECT_NE(refused.status, 0) << refused.out;
  const testing::CommandResult by_name = testing::run_command(
      "curl -sS --max-time 20 " + tls_listener_ca() +
      " --resolve wrong.example:" + std::to_string(server.port()) +
      ":127.0.0.1 https://wrong.example:" + std::to_string(server.port()) + "/healthz 2>&1");
  EXPECT_EQ(by_name.status, 0) << by_name.out;
  // A key that does not match: not reloaded, the certificate in force stays.
  std::filesystem::copy_file(testing::tls_files().server_key, dir.path("server.key"),
                             std::filesystem::copy_options::overwrite_existing);
  server.hangup();
  ASSERT_TRUE(testing::wait_until(
      [&] { return server.log().find("TLS certificate not reloaded") != std::string::npos; }, 30s))
      << server.log();
  EXPECT_NE(server.log().find("does not match"), std::string::npos) << server.log();
  const testing::CommandResult kept = testing::run_command(
      "curl -sS --max-time 20 " + tls_listener_ca() +
      " --resolve wrong.example:" + std::to_string(server.port()) +
      ":127.0.0.1 https://wrong.example:" + std::to_string(server.port()) + "/healthz 2>&1");
  EXPECT_EQ(kept.status, 0) << kept.out;
}

TEST(TlsListeners, ValidateRefusesCertificateFilesThatDoNotLoad) {
  TlsListenerDir dir("validate");
  std::ofstream(dir.path("server.crt"), std::ios::trunc) << "not a certificate\n";
  const testing::BinaryRun bad = testing::run_binary("validate " + dir.config(false));
  EXPECT_EQ(bad.status, 1) << bad.err;
  EXPECT_NE(bad.err.find("line 5: server.tls: cert_file \"" + dir.path("server.crt") +
                         "\": cannot load the certificate"),
            std::string::npos)
      << bad.err;
  dir.use_certificate(testing::tls_files().server_cert, testing::tls_files().wrong_host_key);
  const testing::BinaryRun mismatch = testing::run_binary("validate " + dir.config(false));
  EXPECT_EQ(mismatch.status, 1) << mismatch.err;
  EXPECT_NE(mismatch.err.find("does not match the certificate of cert_file"), std::string::npos)
      << mismatch.err;
  // A file that is not one: said as such, not as OpenSSL's "system lib".
  std::filesystem::remove(dir.path("server.crt"));
  const testing::BinaryRun missing = testing::run_binary("validate " + dir.config(false));
  EXPECT_NE(missing.err.find("cannot load the certificate: cannot read it: No such file"),
            std::string::npos)
      << missing.err;
  // A section without its key: one error, said once (not again by the files' load).
  const std::string half = dir.path("half.yaml");
  std::ofstream(half) << "server:\n  tls: {cert_file: " << dir.path("server.crt") << "}\n";
  const testing::BinaryRun once = testing::run_binary("validate " + half);
  EXPECT_EQ(once.status, 1) << once.err;
  const std::string said = "server.tls: needs cert_file and key_file";
  const std::size_t first = once.err.find(said);
  EXPECT_NE(first, std::string::npos) << once.err;
  EXPECT_EQ(once.err.find(said, first + 1), std::string::npos) << once.err;
}

}  // namespace
}  // namespace spillway
