#include "tests/support/tls_certs.h"

#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "tests/support/test_labels.h"

namespace spillway::testing {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("tls_files: " + what); }

// `text` as one /bin/sh word.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `openssl args...` in `dir` (each arg one word) and throws with its output if it fails.
void openssl(const std::string& dir, const std::vector<std::string>& args) {
  std::string command = "cd " + quoted(dir) + " && openssl";
  for (const std::string& arg : args) command += " " + quoted(arg);
  command += " </dev/null 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) fail("popen(" + command + "): " + std::strerror(errno));
  std::string output;
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), got);
  }
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const bool missing = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127;
    fail("`" + command + "` failed (wait status " + std::to_string(status) + ")" +
         (missing ? " (is openssl installed and in PATH?)" : "") + ":\n" + output);
  }
}

// Now plus `offset` as an ASN.1 UTCTime (YYMMDDHHMMSSZ), as `openssl ca -startdate` takes it.
std::string utc_time(std::chrono::seconds offset) {
  const std::time_t when = std::time(nullptr) + static_cast<std::time_t>(offset.count());
  std::tm parts{};
  ::gmtime_r(&when, &parts);
  std::array<char, 32> text{};
  if (std::strftime(text.data(), text.size(), "%y%m%d%H%M%SZ", &parts) == 0) {
    fail("strftime failed");
  }
  return text.data();
}

// For `openssl req` and `openssl ca`, run in the directory itself (the paths are relative to
// it). `openssl ca` rather than `openssl x509 -req`: OpenSSL 3.0's x509 cannot set a notAfter
// in the past, `ca -startdate/-enddate` can.
constexpr const char* kConfig = R"(# Written by spillway's tests/support/tls_certs.cc.
[ req ]
distinguished_name = req_dn
[ req_dn ]

[ ca ]
default_ca = test_ca
[ test_ca ]
database = index.txt
new_certs_dir = issued
serial = serial
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = policy_any
unique_subject = no
email_in_dn = no
copy_extensions = none
[ policy_any ]
commonName = supplied

[ ca_ext ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[ server_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ client_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ wrong_host_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:wrong.example
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
)";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) fail("cannot write " + path);
}

constexpr std::chrono::seconds kHour{3600};
constexpr std::chrono::seconds kDay{24 * 3600};

// `name`.key: a new EC P-256 key.
void make_key(const std::string& dir, const std::string& name) {
  openssl(dir, {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                name + ".key"});
}

// `name`.crt: a self-signed CA certificate for a new key `name`.key.
void make_ca(const std::string& dir, const std::string& name, const std::string& common_name) {
  make_key(dir, name);
  openssl(dir,
          {"req", "-config", "ca.cnf", "-new", "-x509", "-key", name + ".key", "-subj",
           "/CN=" + common_name, "-days", "3650", "-extensions", "ca_ext", "-out", name + ".crt"});
}

// `name`.crt: signed by ca.crt for a new key `name`.key, valid between now + `from` and now +
// `to`, with the extensions of config section `extensions`.
void make_signed(const std::string& dir, const std::string& name, const std::string& common_name,
                 const std::string& extensions, std::chrono::seconds from,
                 std::chrono::seconds to) {
  make_key(dir, name);
  openssl(dir, {"req", "-config", "ca.cnf", "-new", "-key", name + ".key", "-subj",
                "/CN=" + common_name, "-out", name + ".csr"});
  openssl(dir,
          {"ca", "-batch", "-config", "ca.cnf", "-notext", "-extensions", extensions, "-startdate",
           utc_time(from), "-enddate", utc_time(to), "-in", name + ".csr", "-out", name + ".crt"});
}

TlsFiles generate() {
  std::string pattern = fs::temp_directory_path().string() + "/spillway-tls-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    fail("mkdtemp(" + pattern + "): " + std::strerror(errno));
  }
  const std::string dir = pattern;
  try {
    write_file(dir + "/ca.cnf", kConfig);
    write_file(dir + "/index.txt", "");
    write_file(dir + "/serial", "1000\n");
    std::error_code error;
    if (!fs::create_directory(dir + "/issued", error)) {
      fail("cannot create " + dir + "/issued: " + error.message());
    }
    make_ca(dir, "ca", "spillway test CA");
    make_ca(dir, "other-ca", "spillway other test CA");
    const std::chrono::seconds ten_years = 3650 * kDay;
    make_signed(dir, "server", "localhost", "server_ext", -kHour, ten_years);
    make_signed(dir, "client", "spillway test client", "client_ext", -kHour, ten_years);
    make_signed(dir, "wrong-host", "wrong.example", "wrong_host_ext", -kHour, ten_years);
    make_signed(dir, "expired", "localhost", "server_ext", -2 * kDay, -kDay);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    throw;
  }
  const auto path = [&](const std::string& name) { return dir + "/" + name; };
  return TlsFiles{.dir = dir,
                  .ca_cert = path("ca.crt"),
                  .ca_key = path("ca.key"),
                  .server_cert = path("server.crt"),
                  .server_key = path("server.key"),
                  .client_cert = path("client.crt"),
                  .client_key = path("client.key"),
                  .other_ca_cert = path("other-ca.crt"),
                  .wrong_host_cert = path("wrong-host.crt"),
                  .wrong_host_key = path("wrong-host.key"),
                  .expired_cert = path("expired.crt"),
                  .expired_key = path("expired.key")};
}

// Removes the directory at exit, in the process that made it only (not in a forked child).
struct Generated {
  TlsFiles files = generate();
  pid_t owner = ::getpid();

  ~Generated() {
    if (::getpid() != owner) return;
    std::error_code ignored;
    fs::remove_all(files.dir, ignored);
  }
};

}  // namespace

const TlsFiles& tls_files() {
  require_label("tls", "TLS (the test certificates)");
  static const Generated generated;
  return generated.files;
}

}  // namespace spillway::testing
