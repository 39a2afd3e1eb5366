// Peers outside server.trusted_proxies that send a client-address header (X-Forwarded-For,
// Forwarded, X-Real-IP) to GET /v1/auth. Such a header is not believed (anyone can write one), so
// each of their requests is keyed by the peer's own address: when that peer is a proxy the config
// does not trust (the built-in config trusts none), every client behind it shares one budget.
// Nothing else would say so: each such request is counted (spillway_untrusted_forwarded_total),
// and the first one from each peer is logged, once.
//
// Memory is bounded: at most kMaxPeers peers are remembered; after that, one line says that
// further peers are not named one by one (the counter still counts them).
//
// Thread safety: saw() and append_metrics() from any thread; the count is an atomic, the peers a
// set under a mutex (taken only for requests that carry such a header from an untrusted peer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace spillway::server {

class UntrustedForwarders {
 public:
  static constexpr std::size_t kMaxPeers = 1024;

  // `log` gets each line (without '\n'); empty: one write(2) per line to stderr.
  explicit UntrustedForwarders(std::function<void(const std::string&)> log = {});

  // One request from `peer` (its address, as text) carrying `header` (its name, e.g.
  // "X-Forwarded-For"), from a peer that is not a trusted proxy.
  void saw(std::string_view peer, std::string_view header);

  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // The counter, as Prometheus text (always present, 0 included, so an alert can be written).
  void append_metrics(std::string& out) const;

 private:
  void write(const std::string& line) const;

  const std::function<void(const std::string&)> log_;
  std::atomic<std::uint64_t> count_{0};
  std::mutex mutex_;  // guards the members below
  // Peers looked up by string_view, without a copy: a known peer costs no allocation.
  struct PeerHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view peer) const {
      return std::hash<std::string_view>{}(peer);
    }
  };
  std::unordered_set<std::string, PeerHash, std::equal_to<>> peers_;
  bool full_said_ = false;
};

}  // namespace spillway::server
