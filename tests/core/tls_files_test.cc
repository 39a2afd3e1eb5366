// src/core/tls_files.h: a TLS file that cannot be used is named with what is wrong with it (cannot
// be read, a directory, empty, no PEM block), not OpenSSL's "PEM lib" or "system lib"; the error
// starts with the file as the caller names it.
#include "src/core/tls_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/tls_certs.h"

namespace spillway {
namespace {

namespace ssl = boost::asio::ssl;

// A scratch folder of this process, removed with it.
class TlsFilesScratch {
 public:
  TlsFilesScratch()
      : dir_(std::filesystem::temp_directory_path() /
             ("spillway_tls_files_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "a-directory");
  }
  ~TlsFilesScratch() { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return path(name);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

std::string tls_files_certificate_error(const std::string& path) {
  ssl::context context(ssl::context::tls_server);
  const Result<void> loaded =
      tls_files::use_certificate_and_key(context, {path, "cert_file \"" + path + "\""},
                                         {path, "key_file \"" + path + "\""}, "does not match");
  return loaded ? "" : loaded.error().message;
}

TEST(TlsFiles, AFileThatCannotBeACertificateSaysWhy) {
  const TlsFilesScratch scratch;
  const struct {
    std::string path;
    std::string why;
  } cases[] = {
      {scratch.path("missing.pem"), "cannot read it: No such file or directory"},
      {scratch.path("a-directory"), "it is a directory"},
      {scratch.write("empty.pem", ""), "it is empty"},
      {scratch.write("junk.pem", std::string(100000, 'x')), "no PEM block (-----BEGIN …) in it"},
  };
  for (const auto& c : cases) {
    const std::string error = tls_files_certificate_error(c.path);
    EXPECT_EQ(error, "cert_file \"" + c.path + "\": cannot load the certificate: " + c.why)
        << c.path;
  }
}

TEST(TlsFiles, APemFileOpenSslRefusesKeepsOpenSslsReason) {
  const TlsFilesScratch scratch;
  const std::string broken = scratch.write("broken.pem",
                                           "-----BEGIN CERTIFICATE-----\nnot base64 !!\n"
                                           "-----END CERTIFICATE-----\n");
  const std::string error = tls_files_certificate_error(broken);
  EXPECT_TRUE(error.starts_with("cert_file \"" + broken + "\": cannot load the certificate: "))
      << error;
  EXPECT_EQ(error.find("it is"), std::string::npos) << error;
}

TEST(TlsFiles, AKeyFileHoldingACertificateSaysItHasNoPrivateKey) {
  const testing::TlsFiles& files = testing::tls_files();
  ssl::context context(ssl::context::tls_server);
  const Result<void> loaded = tls_files::use_certificate_and_key(
      context, {files.server_cert, "cert_file"}, {files.server_cert, "key_file"}, "does not match");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message,
            "key_file: cannot load the private key: no private key in it (its PEM blocks are of "
            "another kind)");
}

TEST(TlsFiles, AKeyThatIsNotTheCertificatesSaysSo) {
  const testing::TlsFiles& files = testing::tls_files();
  ssl::context context(ssl::context::tls_server);
  const Result<void> loaded = tls_files::use_certificate_and_key(
      context, {files.server_cert, "cert_file"}, {files.client_key, "key_file"},
      "does not match cert_file");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message, "key_file does not match cert_file");
}

TEST(TlsFiles, ACaFileThatCannotBeReadSaysWhy) {
  const TlsFilesScratch scratch;
  ssl::context context(ssl::context::tls_client);
  const std::string missing = scratch.path("ca-missing.pem");
  const Result<void> loaded =
      tls_files::load_verify_file(context, {missing, "tls_ca_file '" + missing + "'"});
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message, "tls_ca_file '" + missing +
                                        "': cannot load CA certificates: cannot read it: No such "
                                        "file or directory");
}

}  // namespace
}  // namespace spillway
