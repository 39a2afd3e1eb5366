// What a Redis Cluster client learns from the cluster: which primary owns each hash slot
// (CLUSTER SLOTS), and where a MOVED or ASK reply sends a command. Plain values and pure parsing
// functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/redis/key_slot.h"
#include "src/redis/reply.h"

namespace spillway::redis {

struct NodeAddress {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
};

// "host:port", split at the last ':' (an IPv6 host may hold ':'; brackets are removed).
Result<NodeAddress> parse_node_address(std::string_view text);

// The owner of every slot: an index into `primaries`, or kNoOwner for a slot nobody serves.
struct SlotMap {
  static constexpr std::int16_t kNoOwner = -1;
  std::vector<NodeAddress> primaries;
  std::array<std::int16_t, kClusterSlots> owner;
  SlotMap() { owner.fill(kNoOwner); }
  const NodeAddress* owner_of(std::uint16_t slot) const {
    const std::int16_t index = owner[slot];
    return index == kNoOwner ? nullptr : &primaries[static_cast<std::size_t>(index)];
  }
};

// Reads a CLUSTER SLOTS reply: [[first, last, [host, port, id, …], replica…], …]. A node whose
// host is empty ("announced as unknown") is taken to be `asked`, the node that answered.
Result<SlotMap> parse_cluster_slots(const Reply& reply, const NodeAddress& asked);

// "MOVED 3999 127.0.0.1:6381" (the slot lives there now) or "ASK 3999 127.0.0.1:6381" (it is
// being migrated there: ask once with ASKING). nullopt for any other error text.
struct Redirect {
  enum class Kind { kMoved, kAsk };
  Kind kind;
  std::uint16_t slot;
  NodeAddress to;
};
std::optional<Redirect> parse_redirect(std::string_view error_text);

}  // namespace spillway::redis
