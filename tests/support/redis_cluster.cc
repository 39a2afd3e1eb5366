#include "tests/support/redis_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/process.h"

namespace spillway::testing {
namespace {

bool can_bind(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::uint16_t cluster_port() {
  static std::mt19937 random(
      static_cast<unsigned>(::getpid()) * 7919u +
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 1000; ++attempt) {
    // Below the kernel's ephemeral range (32768 and up by default), bus port included: no
    // outgoing connection can take the port between this check and redis-server's bind.
    const auto port = static_cast<std::uint16_t>(10000 + random() % 12700);
    if (can_bind(port) && can_bind(static_cast<std::uint16_t>(port + 10000))) return port;
  }
  throw std::runtime_error("RedisCluster: no free port pair (port, port + 10000) found");
}

namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

RedisCluster::RedisCluster(int primaries, const std::string& extra_config, int replicas_each) {
  require_label("cluster", "a Redis Cluster");
  // repl-diskless-sync-delay 0: a primary starts a replica's (diskless) sync at once, instead of
  // waiting Redis's default 5 s for more replicas to join it: the cluster is ready in ~2 s, not
  // ~7.5 s (measured with redis-server 7.0 on the 2-core CI machine; docs/benchmarks.md).
  const std::string config =
      "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\n"
      "cluster-replica-validity-factor 0\nrepl-diskless-sync-delay 0\n" +
      extra_config;
  std::string addresses;
  for (int i = 0; i < primaries * (1 + replicas_each); ++i) {
    nodes_.push_back(std::make_unique<RedisServer>(config, cluster_port()));
    addresses += " 127.0.0.1:" + std::to_string(nodes_.back()->port());
  }
  const CommandResult created =
      run_command("redis-cli --cluster create" + addresses + " --cluster-replicas " +
                  std::to_string(replicas_each) + " --cluster-yes 2>&1");
  if (created.status != 0 ||
      created.out.find("[OK] All 16384 slots covered") == std::string::npos) {
    throw std::runtime_error("RedisCluster: redis-cli --cluster create failed:\n" + created.out);
  }
  if (!wait_ok(30)) throw std::runtime_error("RedisCluster: cluster_state never became ok");
  if (replicas_each == 0) return;
  // Every replica has its primary's data stream up (a failover needs it).
  const bool synced = wait_until(
      [&] {
        const std::vector<RedisServer*> all = replicas();
        return static_cast<int>(all.size()) == primaries * replicas_each &&
               std::all_of(all.begin(), all.end(), [](RedisServer* replica) {
                 return replica->cli("INFO replication").find("master_link_status:up") !=
                        std::string::npos;
               });
      },
      std::chrono::seconds(30));
  if (!synced) throw std::runtime_error("RedisCluster: replicas did not sync with their primaries");
}

std::string RedisCluster::url() const {
  return "redis+cluster://127.0.0.1:" + std::to_string(nodes_[0]->port()) +
         ",127.0.0.1:" + std::to_string(nodes_[1]->port());
}

std::vector<RedisServer*> RedisCluster::nodes() const {
  std::vector<RedisServer*> out;
  for (const auto& node : nodes_) out.push_back(node.get());
  return out;
}

std::vector<RedisServer*> RedisCluster::primaries() const {
  std::vector<RedisServer*> out;
  for (const auto& node : nodes_) {
    if (node->running() && node->cli("ROLE").starts_with("master")) out.push_back(node.get());
  }
  return out;
}

std::vector<RedisServer*> RedisCluster::replicas() const {
  std::vector<RedisServer*> out;
  for (const auto& node : nodes_) {
    if (node->running() && node->cli("ROLE").starts_with("slave")) out.push_back(node.get());
  }
  return out;
}

std::string RedisCluster::id_of(const RedisServer& node) const {
  return trimmed(node.cli("CLUSTER MYID"));
}

RedisServer* RedisCluster::owner_of(std::uint16_t slot) const {
  for (RedisServer* primary : primaries()) {
    // CLUSTER COUNTKEYSINSLOT answers on any node; the owner is the one whose SLOTS say so.
    const std::string nodes = primary->cli("CLUSTER NODES");
    std::istringstream lines(nodes);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find("myself") == std::string::npos) continue;
      std::istringstream fields(line);
      std::string field;
      for (int i = 0; i < 8 && fields >> field; ++i) {
      }
      while (fields >> field) {
        if (field.starts_with("[")) continue;  // a slot being migrated
        const std::size_t dash = field.find('-');
        const int first = std::stoi(field.substr(0, dash));
        const int last = dash == std::string::npos ? first : std::stoi(field.substr(dash + 1));
        if (slot >= first && slot <= last) return primary;
      }
    }
  }
  return nullptr;
}

bool RedisCluster::wait_ok(int seconds) const {
  return wait_until(
      [&] {
        bool ok = true;
        std::string slots;
        for (const auto& node : nodes_) {
          if (!node->running()) continue;
          ok = ok && node->cli("CLUSTER INFO").find("cluster_state:ok") != std::string::npos;
          // Every node's view of the slot owners must agree (compare their SLOTS by ports).
          std::string view;
          std::istringstream lines(node->cli("CLUSTER NODES"));
          std::string line;
          std::map<std::string, std::string> masters;  // "ip:port" -> slots text
          while (std::getline(lines, line)) {
            std::istringstream fields(line);
            std::vector<std::string> f;
            std::string field;
            while (fields >> field) f.push_back(field);
            if (f.size() < 8 || f[2].find("master") == std::string::npos ||
                f[2].find("fail") != std::string::npos) {
              continue;
            }
            std::string owned;
            for (std::size_t i = 8; i < f.size(); ++i) {
              if (!f[i].starts_with("[")) owned += f[i] + " ";
            }
            masters[f[1].substr(0, f[1].find('@'))] = owned;
          }
          for (const auto& [address, owned] : masters) view += address + "=" + owned + ";";
          if (slots.empty()) slots = view;
          ok = ok && view == slots;
        }
        return ok;
      },
      std::chrono::seconds(seconds));
}

int RedisCluster::move_slot(std::uint16_t slot, RedisServer& to, int migrate_pause_ms) {
  RedisServer* from = owner_of(slot);
  if (from == nullptr) throw std::runtime_error("move_slot: slot has no owner");
  if (from == &to) return 0;
  const std::string s = std::to_string(slot);
  const std::string to_id = id_of(to);
  const std::string from_id = id_of(*from);
  to.cli("CLUSTER SETSLOT " + s + " IMPORTING " + from_id);
  from->cli("CLUSTER SETSLOT " + s + " MIGRATING " + to_id);
  int moved = 0;
  while (true) {
    std::istringstream keys(from->cli("CLUSTER GETKEYSINSLOT " + s + " 10"));
    std::string key, list;
    int count = 0;
    while (std::getline(keys, key)) {
      if (key.empty()) continue;
      list += " '" + key + "'";  // spillway's test keys hold no quote
      ++count;
    }
    if (count == 0) break;
    from->cli("MIGRATE 127.0.0.1 " + std::to_string(to.port()) + " \"\" 0 5000 REPLACE KEYS" +
              list);
    moved += count;
    if (migrate_pause_ms > 0) {
      // Real time: a slow migration, for clients to meet a slot half moved.
      std::this_thread::sleep_for(std::chrono::milliseconds(migrate_pause_ms));
    }
  }
  // The importing node first, then the one that gave the slot away, then the others (so that no
  // two nodes send a client back and forth for longer than a moment).
  to.cli("CLUSTER SETSLOT " + s + " NODE " + to_id);
  from->cli("CLUSTER SETSLOT " + s + " NODE " + to_id);
  for (RedisServer* primary : primaries()) {
    if (primary != &to && primary != from) primary->cli("CLUSTER SETSLOT " + s + " NODE " + to_id);
  }
  return moved;
}

std::vector<std::string> RedisCluster::on_every_node(const std::string& args) const {
  std::vector<std::string> out;
  for (const auto& node : nodes_) {
    if (node->running()) out.push_back(node->cli(args));
  }
  return out;
}

RedisCluster& shared_cluster() {
  static RedisCluster* cluster = new RedisCluster();
  return *cluster;
}

}  // namespace spillway::testing
