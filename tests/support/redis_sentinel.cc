#include "tests/support/redis_sentinel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "tests/support/child_process.h"
#include "tests/support/poll.h"
#include "tests/support/test_labels.h"

namespace spillway::testing {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("SentinelGroup: " + what);
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// A loopback port that was free a moment ago (bind to port 0, read it back, close).
std::uint16_t unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(std::string("socket(): ") + std::strerror(errno));
  sockaddr_in address = loopback(0);
  socklen_t length = sizeof address;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) fail(std::string("bind(127.0.0.1:0): ") + std::strerror(error));
  return ntohs(address.sin_port);
}

// True when the port answers PING with +PONG (within 0.5 s).
bool answers_ping(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval timeout{};
  timeout.tv_usec = 500 * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address = loopback(port);
  constexpr std::string_view kPing = "PING\r\n";
  std::array<char, 64> buffer{};
  ssize_t got = -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, kPing.data(), kPing.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(kPing.size())) {
    got = ::recv(fd, buffer.data(), buffer.size(), 0);
  }
  ::close(fd);
  return got > 0 &&
         std::string_view(buffer.data(), static_cast<std::size_t>(got)).starts_with("+PONG");
}

// The first `name` in PATH that is executable.
std::string find_in_path(const std::string& name, const std::string& package) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  fail(name + " was not found in PATH (install the package " + package + ")");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

using Fields = std::map<std::string, std::string>;

// redis-cli's output (one element a line) of SENTINEL REPLICAS / SENTINELS: an array of flat
// field-value arrays, each starting with "name". One map per entry.
std::vector<Fields> entries_of(const std::string& output) {
  const std::vector<std::string> lines = lines_of(output);
  std::vector<Fields> entries;
  for (std::size_t i = 0; i + 1 < lines.size(); i += 2) {
    if (lines[i] == "name") entries.emplace_back();
    if (entries.empty()) return {};  // not that shape (an error, or nothing)
    entries.back()[lines[i]] = lines[i + 1];
  }
  return entries;
}

// The port in SENTINEL GET-MASTER-ADDR-BY-NAME's answer ("127.0.0.1\n<port>\n"); 0 if none.
std::uint16_t port_in_address(const std::string& output) {
  const std::vector<std::string> lines = lines_of(output);
  if (lines.size() < 2 || lines[0] != "127.0.0.1") return 0;
  try {
    const int port = std::stoi(lines[1]);
    return port > 0 && port < 65536 ? static_cast<std::uint16_t>(port) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// "master_link_status:up" in INFO replication.
bool link_up(const RedisServer& replica) {
  return replica.cli("INFO replication").find("master_link_status:up") != std::string::npos;
}

// SENTINEL DEBUG timings (ms), set after every start (they are not persisted):
// - info-period (INFO to every server; default 10000) and publish-period (hello messages to the
//   other sentinels through the servers; default 2000): with the defaults a demoted primary is
//   made a replica ~10 s after a failover and the sentinels see it in sync ~10 s later, and the
//   sentinels find each other in ~2 s; with these, ~3 s and ~0.5 s.
// - ping-period (default 1000, as long as down-after-milliseconds 1000): with the two above and
//   a ping-period of 1000, restarting a killed primary right after its failover made the
//   sentinels see the new primary down for a moment and fail over once more in 4 of 25 runs
//   (0 of 20 with all three defaults, 0 of 50 with these).
// What makes a server down (down-after-milliseconds) and the failover itself are unchanged.
constexpr const char* kTimings = "info-period 1000 publish-period 500 ping-period 250";

}  // namespace

// One redis-sentinel process with its directory (config, log). The config is written once;
// the sentinel rewrites it, and start() after stop() reuses it.
class SentinelGroup::Sentinel {
 public:
  Sentinel(std::uint16_t port, const std::string& config_text) : port_(port) {
    std::string pattern = fs::temp_directory_path().string() + "/spillway-sentinel-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      fail("mkdtemp(" + pattern + "): " + std::strerror(errno));
    }
    dir_ = pattern;
    std::ofstream config(config_path(), std::ios::trunc);
    config << "port " << port_ << "\n"
           << "bind 127.0.0.1\n"
           << "daemonize no\n"
           << "dir " << dir_ << "\n"
           << config_text;
    config.close();
    if (!config) {
      remove_dir();
      fail("cannot write " + config_path());
    }
  }
  ~Sentinel() {
    stop();
    remove_dir();
  }
  Sentinel(const Sentinel&) = delete;
  Sentinel& operator=(const Sentinel&) = delete;

  std::uint16_t port() const { return port_; }
  bool running() const { return process_.has_value(); }
  std::string log() const { return read_file(log_path()); }

  // Starts redis-sentinel and waits (5 s) until it answers PING; throws with its log if not.
  void start() {
    if (process_) return;
    const std::string log = log_path();
    // The log is appended to: a restarted sentinel's log keeps what it said before. The label was
    // checked when the group was created.
    process_.emplace(
        std::vector<std::string>{find_in_path("redis-sentinel", "redis-sentinel"), config_path()},
        log, ChildOptions{.append_log = true, .check_label = false});
    const ChildProcess::Started started =
        process_->wait_started([&] { return answers_ping(port_); }, std::chrono::seconds(5));
    if (started.exited) {
      process_.reset();
      fail("redis-sentinel exited during startup (status " + std::to_string(*started.exited) +
           "); its log:\n" + read_file(log));
    }
    if (!started.answered) {
      stop();
      fail("redis-sentinel did not answer PING on port " + std::to_string(port_) +
           " within 5 s; its log:\n" + read_file(log));
    }
    // Faster than the defaults (10000 and 2000 ms), not persisted: after every start.
    const std::string tuned = output_of("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) +
                                        " SENTINEL DEBUG " + kTimings + " 2>&1");
    if (!tuned.starts_with("OK")) {
      stop();
      fail("SENTINEL DEBUG " + std::string(kTimings) + " answered: " + tuned);
    }
  }

  void stop() {
    if (!process_) return;
    process_->stop(SIGKILL);
    process_.reset();
  }

 private:
  std::string config_path() const { return dir_ + "/sentinel.conf"; }
  std::string log_path() const { return dir_ + "/sentinel.log"; }
  void remove_dir() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string dir_;
  std::uint16_t port_;
  std::optional<ChildProcess> process_;  // while started
};

SentinelGroup::SentinelGroup(std::string master_name, int down_after_ms, int failover_timeout_ms)
    : master_name_(std::move(master_name)) {
  require_label("sentinel", "a Redis Sentinel deployment");
  // Replication through an RDB file: after a diskless (socket) sync, Redis 7.0 holds the
  // primary's writes back from the replica until the replica's first REPLCONF ACK, up to 1 s
  // later, and a failover in that second lost them. (Diskless would also wait 5 s for more
  // replicas by default: repl-diskless-sync-delay.)
  const std::string server_config = "repl-diskless-sync no\n";
  primary_ = std::make_unique<RedisServer>(server_config);
  replica_ = std::make_unique<RedisServer>(server_config + "replicaof 127.0.0.1 " +
                                           std::to_string(primary_->port()) + "\n");
  if (!wait_until([&] { return link_up(*replica_); }, std::chrono::seconds(10))) {
    fail("the replica did not sync with the primary within 10 s; " + logs());
  }
  const std::string& name = master_name_;
  const std::string monitor =
      "sentinel monitor " + name + " 127.0.0.1 " + std::to_string(primary_->port()) + " 2\n" +
      "sentinel down-after-milliseconds " + name + " " + std::to_string(down_after_ms) + "\n" +
      "sentinel failover-timeout " + name + " " + std::to_string(failover_timeout_ms) + "\n" +
      "sentinel parallel-syncs " + name + " 1\n";
  for (int i = 0; i < 3; ++i) {
    sentinels_.push_back(std::make_unique<Sentinel>(unused_port(), monitor));
    sentinels_.back()->start();
  }
  if (!wait_settled(std::chrono::seconds(30))) {
    fail("the deployment did not settle within 30 s; " + logs());
  }
}

SentinelGroup::~SentinelGroup() {
  sentinels_.clear();  // first, so that they do not react to the servers going away
  replica_.reset();
  primary_.reset();
}

std::string SentinelGroup::url() const {
  std::string url = "redis+sentinel://";
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    url += (i == 0 ? "" : ",") + std::string("127.0.0.1:") + std::to_string(sentinels_[i]->port());
  }
  return url + "/" + master_name_;
}

std::vector<std::uint16_t> SentinelGroup::sentinel_ports() const {
  std::vector<std::uint16_t> ports;
  for (const auto& sentinel : sentinels_) ports.push_back(sentinel->port());
  return ports;
}

std::uint16_t SentinelGroup::primary_port() const {
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    if (!sentinels_[i]->running()) continue;
    return port_in_address(
        sentinel_cli(static_cast<int>(i), "SENTINEL get-master-addr-by-name " + master_name_));
  }
  return 0;
}

std::uint16_t SentinelGroup::initial_primary_port() const { return primary_->port(); }

std::uint16_t SentinelGroup::initial_replica_port() const { return replica_->port(); }

RedisServer& SentinelGroup::server_on(std::uint16_t port) {
  if (port == primary_->port()) return *primary_;
  if (port == replica_->port()) return *replica_;
  fail("no server of the group is on port " + std::to_string(port));
}

void SentinelGroup::kill_primary() {
  const std::uint16_t port = primary_port();
  if (port == 0) fail("kill_primary(): the sentinels name no primary; " + logs());
  server_on(port).stop();
}

void SentinelGroup::failover() {
  std::string answer = sentinel_cli(0, "SENTINEL FAILOVER " + master_name_);
  while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
  if (answer != "OK") fail("SENTINEL FAILOVER " + master_name_ + " answered: " + answer);
}

bool SentinelGroup::wait_for_new_primary(std::uint16_t old_port,
                                         std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        std::uint16_t agreed = 0;
        bool ok = true;
        for (std::size_t i = 0; ok && i < sentinels_.size(); ++i) {
          if (!sentinels_[i]->running()) continue;
          const std::uint16_t port = port_in_address(sentinel_cli(
              static_cast<int>(i), "SENTINEL get-master-addr-by-name " + master_name_));
          ok = port != 0 && port != old_port && (agreed == 0 || port == agreed);
          agreed = port;
        }
        if (!ok || agreed == 0) return false;
        const RedisServer& server = server_on(agreed);
        return server.running() && server.cli("ROLE").starts_with("master");
      },
      timeout);
}

bool SentinelGroup::wait_settled(std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        last_unsettled_ = unsettled();
        return last_unsettled_.empty();
      },
      timeout);
}

std::string SentinelGroup::unsettled() {
  const std::uint16_t primary = primary_port();
  const std::string p = std::to_string(primary);
  if (primary == 0) return "the first running sentinel names no primary";
  if (!server_on(primary).running()) return "the primary named, on " + p + ", is stopped";
  if (!server_on(primary).cli("ROLE").starts_with("master")) {
    return "the primary named, on " + p + ", does not say ROLE master";
  }
  std::vector<std::string> replicas;
  for (RedisServer* server : {primary_.get(), replica_.get()}) {
    if (server->port() == primary || !server->running()) continue;
    const std::string port = std::to_string(server->port());
    const std::vector<std::string> role = lines_of(server->cli("ROLE"));
    if (role.size() < 3 || role[0] != "slave" || role[2] != p) {
      return "the server on " + port + " is not a replica of " + p;
    }
    if (!link_up(*server)) return "the replica on " + port + " has no master_link_status:up";
    replicas.push_back(port);
  }
  const std::string& name = master_name_;
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    if (!sentinels_[i]->running()) continue;
    const int index = static_cast<int>(i);
    const std::string sentinel = "sentinel #" + std::to_string(i);
    if (port_in_address(sentinel_cli(index, "SENTINEL get-master-addr-by-name " + name)) !=
        primary) {
      return sentinel + " names another primary than " + p;
    }
    const std::vector<Fields> known = entries_of(sentinel_cli(index, "SENTINEL replicas " + name));
    for (const std::string& port : replicas) {
      std::string seen = "nothing";
      for (const Fields& replica : known) {
        const auto field = [&](const std::string& key) {
          const auto found = replica.find(key);
          return found == replica.end() ? std::string() : found->second;
        };
        if (field("port") != port) continue;
        seen = "flags " + field("flags") + ", master-link-status " + field("master-link-status") +
               ", master-port " + field("master-port");
        if (field("flags") == "slave" && field("master-link-status") == "ok" &&
            field("master-port") == p) {
          seen.clear();
        }
      }
      if (!seen.empty()) return sentinel + " knows of the replica on " + port + ": " + seen;
    }
    const std::size_t sentinels =
        entries_of(sentinel_cli(index, "SENTINEL sentinels " + name)).size();
    if (sentinels != sentinels_.size() - 1) {
      return sentinel + " knows " + std::to_string(sentinels) + " other sentinels";
    }
    std::string quorum = sentinel_cli(index, "SENTINEL ckquorum " + name);
    if (!quorum.starts_with("OK")) return sentinel + " CKQUORUM: " + quorum;
  }
  return "";
}

std::string SentinelGroup::sentinel_cli(int index, const std::string& args) const {
  if (index < 0 || index >= static_cast<int>(sentinels_.size())) {
    fail("no sentinel #" + std::to_string(index));
  }
  return output_of("redis-cli -h 127.0.0.1 -p " +
                   std::to_string(sentinels_[static_cast<std::size_t>(index)]->port()) + " " +
                   args + " 2>/dev/null");
}

void SentinelGroup::stop_sentinel(int index) {
  if (index < 0 || index >= static_cast<int>(sentinels_.size())) {
    fail("no sentinel #" + std::to_string(index));
  }
  sentinels_[static_cast<std::size_t>(index)]->stop();
}

void SentinelGroup::start_sentinel(int index) {
  if (index < 0 || index >= static_cast<int>(sentinels_.size())) {
    fail("no sentinel #" + std::to_string(index));
  }
  sentinels_[static_cast<std::size_t>(index)]->start();
}

std::string SentinelGroup::logs() const {
  std::string out = last_unsettled_.empty() ? "" : "last unsettled: " + last_unsettled_;
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    out += "\n--- sentinel #" + std::to_string(i) + " (port " +
           std::to_string(sentinels_[i]->port()) + (sentinels_[i]->running() ? "" : ", stopped") +
           ") log:\n" + sentinels_[i]->log();
  }
  for (const RedisServer* server : {primary_.get(), replica_.get()}) {
    if (server == nullptr) continue;
    out += "\n--- redis-server on port " + std::to_string(server->port()) +
           (server->running() ? ", ROLE:\n" + server->cli("ROLE") : ", stopped") + "\nlog:\n" +
           server->log();
  }
  return out;
}

}  // namespace spillway::testing
