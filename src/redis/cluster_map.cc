#include "src/redis/cluster_map.h"

#include <charconv>

namespace spillway::redis {
namespace {

template <typename Int>
std::optional<Int> whole(std::string_view text) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::unexpected<Error> bad_slots(const std::string& what) {
  return std::unexpected(Error{Errc::kUnavailable, "unexpected CLUSTER SLOTS reply: " + what});
}

}  // namespace

Result<NodeAddress> parse_node_address(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return invalid_argument("\"" + std::string(text) + "\" is not host:port");
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::optional<unsigned> port = whole<unsigned>(text.substr(colon + 1));
  if (host.empty() || !port || *port == 0 || *port > 65535) {
    return invalid_argument("\"" + std::string(text) + "\" is not host:port with a port 1-65535");
  }
  return NodeAddress{std::string(host), static_cast<std::uint16_t>(*port)};
}

Result<SlotMap> parse_cluster_slots(const Reply& reply, const NodeAddress& asked) {
  if (reply.is_error()) {
    return std::unexpected(Error{Errc::kUnavailable, "CLUSTER SLOTS failed: " + reply.text});
  }
  if (reply.type != Reply::Type::kArray) return bad_slots("not an array");
  SlotMap map;
  for (const Reply& range : reply.elements) {
    if (range.type != Reply::Type::kArray || range.elements.size() < 3 ||
        range.elements[0].type != Reply::Type::kInteger ||
        range.elements[1].type != Reply::Type::kInteger ||
        range.elements[2].type != Reply::Type::kArray || range.elements[2].elements.size() < 2) {
      return bad_slots("a slot range is malformed");
    }
    const std::int64_t first = range.elements[0].integer;
    const std::int64_t last = range.elements[1].integer;
    if (first < 0 || last < first || last >= kClusterSlots) {
      return bad_slots("slot range " + std::to_string(first) + "-" + std::to_string(last));
    }
    const Reply& node = range.elements[2];
    if (node.elements[0].type != Reply::Type::kString ||
        node.elements[1].type != Reply::Type::kInteger || node.elements[1].integer <= 0 ||
        node.elements[1].integer > 65535) {
      return bad_slots("a node of slots " + std::to_string(first) + "-" + std::to_string(last) +
                       " is malformed");
    }
    NodeAddress address{node.elements[0].text,
                        static_cast<std::uint16_t>(node.elements[1].integer)};
    if (address.host.empty() || address.host == "?") address.host = asked.host;
    std::size_t index = 0;
    while (index < map.primaries.size() && !(map.primaries[index] == address)) ++index;
    if (index == map.primaries.size()) map.primaries.push_back(std::move(address));
    for (std::int64_t slot = first; slot <= last; ++slot) {
      map.owner[static_cast<std::size_t>(slot)] = static_cast<std::int16_t>(index);
    }
  }
  return map;
}

std::optional<Redirect> parse_redirect(std::string_view text) {
  Redirect redirect{};
  if (text.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::kMoved;
    text.remove_prefix(6);
  } else if (text.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::kAsk;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::optional<unsigned> slot = whole<unsigned>(text.substr(0, space));
  Result<NodeAddress> to = parse_node_address(text.substr(space + 1));
  if (!slot || *slot >= kClusterSlots || !to) return std::nullopt;
  redirect.slot = static_cast<std::uint16_t>(*slot);
  redirect.to = std::move(*to);
  return redirect;
}

}  // namespace spillway::redis
