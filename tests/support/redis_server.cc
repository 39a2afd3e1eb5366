#include "tests/support/redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/support/test_labels.h"
#include "tests/support/tls_certs.h"

namespace spillway::testing {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("RedisServer: " + what);
}

// Closes the descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The directories of the servers alive now. A server kept for the whole process (a static that
// is never destroyed) never runs its destructor: its directory is removed when the process exits
// (its redis-server dies then too, by PR_SET_PDEATHSIG). Thread-safe.
class LiveDirs {
 public:
  static LiveDirs& get() {
    static LiveDirs* const dirs = new LiveDirs;  // never destroyed: used by the exit handler
    return *dirs;
  }
  void add(const std::string& dir) {
    std::lock_guard lock(mutex_);
    if (!registered_) registered_ = std::atexit([] { get().remove_all(); }) == 0;
    dirs_.insert(dir);
  }
  void remove(const std::string& dir) {
    std::lock_guard lock(mutex_);
    dirs_.erase(dir);
  }

 private:
  void remove_all() {
    std::lock_guard lock(mutex_);
    for (const std::string& dir : dirs_) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
    dirs_.clear();
  }
  std::mutex mutex_;
  std::set<std::string> dirs_;
  bool registered_ = false;
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Asks the kernel for a free loopback port: bind to port 0, read it back, close.
std::uint16_t free_port() {
  const Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) fail(std::string("socket(): ") + std::strerror(errno));
  sockaddr_in address = loopback(0);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    fail(std::string("bind(127.0.0.1:0): ") + std::strerror(errno));
  }
  socklen_t length = sizeof address;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    fail(std::string("getsockname(): ") + std::strerror(errno));
  }
  return ntohs(address.sin_port);
}

// True when something on the port answers PING like a Redis server (+PONG, or -NOAUTH when the
// config sets requirepass).
// Whether a Redis answers PING at `address` (a sockaddr_in or sockaddr_un).
bool answers_ping(const sockaddr* address, socklen_t size) {
  const Fd fd(::socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return false;
  timeval timeout{};
  timeout.tv_usec = 500 * 1000;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(fd.get(), address, size) != 0) return false;
  constexpr std::string_view kPing = "PING\r\n";
  if (::send(fd.get(), kPing.data(), kPing.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(kPing.size())) {
    return false;
  }
  std::array<char, 64> buffer{};
  const ssize_t got = ::recv(fd.get(), buffer.data(), buffer.size(), 0);
  if (got <= 0) return false;
  const std::string_view reply(buffer.data(), static_cast<std::size_t>(got));
  return reply.starts_with("+PONG") || reply.starts_with("-NOAUTH");
}

// The first `name` in PATH that is executable.
std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  fail(name + " was not found in PATH (install redis-server)");
}

// True when something accepts a TCP connection on the port.
bool accepts(std::uint16_t port) {
  const Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return false;
  sockaddr_in address = loopback(port);
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
}

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

// Runs a /bin/sh command and returns its stdout.
std::string output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) fail("popen(" + command + "): " + std::strerror(errno));
  std::string out;
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    out.append(buffer.data(), got);
  }
  ::pclose(pipe);
  return out;
}

// A URL query value: RFC 3986 unreserved characters and '/' as they are, the rest as %XX.
std::string percent_encoded(const std::string& text) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
        (byte >= '0' && byte <= '9') ||
        std::string_view("-._~/").find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

RedisServer::RedisServer(const std::string& extra_config, std::uint16_t port)
    : extra_config_(extra_config) {
  create(port);
}

RedisServer::RedisServer(const Tls& tls, const std::string& extra_config, std::uint16_t port)
    : tls_(tls), extra_config_(extra_config) {
  const TlsFiles& files = tls_files();
  if (tls_->cert_file.empty() != tls_->key_file.empty()) {
    fail("RedisServer::Tls needs both cert_file and key_file, or neither");
  }
  if (tls_->cert_file.empty()) {
    tls_->cert_file = files.server_cert;
    tls_->key_file = files.server_key;
  }
  create(port);
}

void RedisServer::create(std::uint16_t port) {
  require_label("redis", "a redis-server");
  // A short base directory: unix socket paths are limited to 107 bytes.
  std::string base = fs::temp_directory_path().string();
  if (base.size() > 60) base = "/tmp";
  std::string pattern = base + "/spillway-redis-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    fail("mkdtemp(" + pattern + "): " + std::strerror(errno));
  }
  dir_ = pattern;
  LiveDirs::get().add(dir_);
  if (!tls_) socket_ = dir_ + "/redis.sock";
  try {
    // A port picked here can be taken by another process before redis-server binds it: then
    // another one is picked, twice. A port the caller chose is the caller's to keep free.
    for (int attempt = 1;; ++attempt) {
      port_ = port != 0 ? port : free_port();
      try {
        start();
        break;
      } catch (const std::runtime_error& e) {
        const bool taken =
            std::string_view(e.what()).find("Address already in use") != std::string_view::npos;
        if (port != 0 || !taken || attempt == 3) throw;
      }
    }
  } catch (...) {
    remove_dir();
    throw;
  }
}

RedisServer::~RedisServer() {
  stop();
  remove_dir();
}

void RedisServer::remove_dir() {
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
  LiveDirs::get().remove(dir_);
}

void RedisServer::start() {
  if (process_) return;
  const std::string config_path = dir_ + "/redis.conf";
  const std::string log_path = dir_ + "/redis.log";
  {
    std::ofstream config(config_path, std::ios::trunc);
    if (tls_) {
      config << "port 0\n"
             << "tls-port " << port_ << "\n"
             << "tls-cert-file " << tls_->cert_file << "\n"
             << "tls-key-file " << tls_->key_file << "\n"
             << "tls-ca-cert-file " << tls_files().ca_cert << "\n"
             << "tls-auth-clients " << (tls_->require_client_cert ? "yes" : "no") << "\n";
    } else {
      config << "port " << port_ << "\n"
             << "unixsocket " << socket_ << "\n"
             << "unixsocketperm 700\n";
    }
    config << "bind 127.0.0.1\n"
           << "save \"\"\n"
           << "appendonly no\n"
           << "daemonize no\n"
           << "dir " << dir_ << "\n"
           << extra_config_ << "\n";
    if (!config) fail("cannot write " + config_path);
  }
  // A fresh log per start: what a failed start reports is that start's own output. The label
  // was checked when the server was created.
  process_.emplace(std::vector<std::string>{find_in_path("redis-server"), config_path}, log_path,
                   ChildOptions{.check_label = false});

  std::string last_answer;
  const ChildProcess::Started started =
      process_->wait_started([&] { return ready(last_answer); }, std::chrono::seconds(5));
  if (started.exited) {
    process_.reset();
    fail("redis-server exited during startup (status " + std::to_string(*started.exited) +
         "); its log:\n" + read_file(log_path));
  }
  if (!started.answered) {
    stop();
    fail("redis-server did not answer PING on port " + std::to_string(port_) + " within 5 s" +
         (last_answer.empty() ? "" : " (redis-cli: " + last_answer + ")") + "; its log:\n" +
         read_file(log_path));
  }
}

void RedisServer::stop() {
  if (!process_) return;
  process_->stop(SIGKILL);
  process_.reset();
}

std::string RedisServer::log() const { return read_file(dir_ + "/redis.log"); }

void RedisServer::pause() {
  if (process_) ::kill(process_->pid(), SIGSTOP);
}

void RedisServer::resume() {
  if (process_) ::kill(process_->pid(), SIGCONT);
}

void RedisServer::restart() {
  stop();
  start();
}

// Plain: a PING on a socket. TLS: once the port accepts connections, `redis-cli PING` over TLS
// (its answer, or its error, in last_answer).
bool RedisServer::ready(std::string& last_answer) const {
  if (!tls_) {
    // Through this server's own unix socket, which Redis creates after binding its TCP port:
    // another server that holds the port (taken before our bind) cannot answer here.
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_.size() >= sizeof address.sun_path) return false;
    socket_.copy(address.sun_path, socket_.size());
    return answers_ping(reinterpret_cast<const sockaddr*>(&address), sizeof address);
  }
  if (!accepts(port_)) return false;
  last_answer = output_of(cli_prefix() + " PING 2>&1");
  while (!last_answer.empty() && (last_answer.back() == '\n' || last_answer.back() == '\r')) {
    last_answer.pop_back();
  }
  return last_answer.starts_with("PONG") || last_answer.starts_with("NOAUTH");
}

std::string RedisServer::cli_prefix() const {
  std::string command = "redis-cli -h 127.0.0.1 -p " + std::to_string(port_);
  if (tls_) {
    const TlsFiles& files = tls_files();
    command += " --tls --cacert " + quoted(files.ca_cert) + " --cert " + quoted(files.client_cert) +
               " --key " + quoted(files.client_key);
    if (tls_->cert_file != files.server_cert) command += " --insecure";
  }
  return command;
}

std::string RedisServer::cli(const std::string& args) const {
  return output_of(cli_prefix() + " " + args + " 2>/dev/null");
}

std::string RedisServer::url() const {
  if (!tls_) return "redis://127.0.0.1:" + std::to_string(port_);
  return "rediss://127.0.0.1:" + std::to_string(port_) + "?" + tls_url_query();
}

std::string RedisServer::tls_url_query() const {
  if (!tls_) fail("tls_url_query() on a server without TLS");
  const TlsFiles& files = tls_files();
  std::string query = "tls_ca_file=" + percent_encoded(files.ca_cert);
  if (tls_->require_client_cert) {
    query += "&tls_cert_file=" + percent_encoded(files.client_cert) +
             "&tls_key_file=" + percent_encoded(files.client_key);
  }
  return query;
}

}  // namespace spillway::testing
