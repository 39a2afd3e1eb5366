#include "src/policy/client_address.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "src/core/text.h"
#include "src/policy/forwarded.h"

namespace spillway::policy {
namespace {

constexpr std::size_t kMaxShown = 80;  // bytes of a client's value quoted in an error

std::string quoted(std::string_view text) { return quote_for_error(text, kMaxShown); }

bool all_blank(std::span<const std::string_view> lines) {
  return std::all_of(lines.begin(), lines.end(),
                     [](std::string_view line) { return trim(line).empty(); });
}

// RFC 9110 §5.3: the field lines as one value.
std::string joined(std::span<const std::string_view> lines) {
  std::string out;
  for (std::string_view line : lines) {
    if (!out.empty()) out.append(", ");
    out.append(line);
  }
  return out;
}

Result<IpAddress> from_forwarded_for(const IpAddress& peer, std::span<const std::string_view> lines,
                                     const std::vector<Cidr>& trusted_proxies) {
  const std::string all = joined(lines);
  // Walk from the right (the hop nearest to us); entries left of the first untrusted one were
  // written by the client and are neither believed nor checked.
  std::string_view rest = all;
  std::optional<IpAddress> leftmost;
  while (true) {
    const std::size_t comma = rest.rfind(',');
    const std::string_view entry =
        trim(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
    Result<IpAddress> hop = parse_forwarded_for_entry(entry);
    if (!hop) return invalid_argument("X-Forwarded-For entry " + hop.error().message);
    if (!is_trusted_proxy(*hop, trusted_proxies)) return *hop;
    leftmost = *hop;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(0, comma);
  }
  return leftmost.value_or(peer);
}

Result<IpAddress> from_forwarded(const IpAddress& peer, std::span<const std::string_view> lines,
                                 const std::vector<Cidr>& trusted_proxies) {
  Result<std::vector<ForwardedElement>> elements = parse_forwarded(joined(lines));
  if (!elements) return std::unexpected(elements.error());
  // The nearest hop we know, right of the one being read: who reported that hop.
  IpAddress reporter = peer;
  for (auto element = elements->rbegin(); element != elements->rend(); ++element) {
    if (!element->for_node) return reporter;
    Result<std::optional<IpAddress>> node = parse_forwarded_node(*element->for_node);
    if (!node) return std::unexpected(node.error());
    if (!*node) return reporter;
    if (!is_trusted_proxy(**node, trusted_proxies)) return **node;
    reporter = **node;
  }
  return reporter;
}

Result<IpAddress> from_real_ip(std::span<const std::string_view> lines) {
  if (lines.size() > 1) {
    return invalid_argument("X-Real-IP is sent " + std::to_string(lines.size()) +
                            " times; a proxy sends it once (another came from the client)");
  }
  Result<IpAddress> address = parse_forwarded_for_entry(trim(lines.front()));
  if (!address) return invalid_argument("X-Real-IP " + address.error().message);
  return *address;
}

}  // namespace

bool is_trusted_proxy(const IpAddress& peer, const std::vector<Cidr>& trusted_proxies) {
  return std::any_of(trusted_proxies.begin(), trusted_proxies.end(),
                     [&](const Cidr& cidr) { return cidr_contains(cidr, peer); });
}

std::string_view client_ip_header_name(ClientIpHeader header) {
  switch (header) {
    case ClientIpHeader::kXForwardedFor:
      return "x-forwarded-for";
    case ClientIpHeader::kForwarded:
      return "forwarded";
    case ClientIpHeader::kXRealIp:
      return "x-real-ip";
  }
  return "x-forwarded-for";
}

std::optional<ClientIpHeader> parse_client_ip_header(std::string_view text) {
  for (ClientIpHeader header :
       {ClientIpHeader::kXForwardedFor, ClientIpHeader::kForwarded, ClientIpHeader::kXRealIp}) {
    const std::string_view name = client_ip_header_name(header);
    if (ascii_iequals(text, name)) return header;
  }
  return std::nullopt;
}

Result<IpAddress> parse_forwarded_for_entry(std::string_view entry) {
  const auto bad = [&](std::string_view why) {
    return invalid_argument(quoted(entry) + " " + std::string(why));
  };
  if (entry.starts_with('[')) {
    const std::size_t close = entry.find(']');
    if (close == std::string_view::npos) return bad("opens \"[\" without closing it");
    const std::string_view inside = entry.substr(1, close - 1);
    const std::string_view rest = entry.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !is_port_number(rest.substr(1)))) {
      return bad("has text after \"]\" that is not \":port\" (0-65535)");
    }
    Result<IpAddress> address = parse_ip(inside);
    if (!address || inside.find(':') == std::string_view::npos) {
      return bad("does not hold an IPv6 address in its brackets");
    }
    return *address;
  }
  const std::size_t colon = entry.find(':');
  // One colon: IPv4 with a port. Every IPv6 text form has two or more, so "2001:db8::1" is an
  // address, never "2001:db8:" and port 1.
  if (colon != std::string_view::npos && entry.find(':', colon + 1) == std::string_view::npos) {
    Result<IpAddress> address = parse_ip(entry.substr(0, colon));
    if (!address) return bad("is not an IP address or IPv4:port");
    if (!is_port_number(entry.substr(colon + 1))) return bad("has a port that is not 0-65535");
    return *address;
  }
  Result<IpAddress> address = parse_ip(entry);
  if (!address) return bad("is not an IP address");
  return *address;
}

Result<IpAddress> client_address(const IpAddress& peer, ClientIpHeader header,
                                 std::span<const std::string_view> lines,
                                 const std::vector<Cidr>& trusted_proxies) {
  if (!is_trusted_proxy(peer, trusted_proxies)) return peer;
  if (lines.empty()) return peer;
  switch (header) {
    case ClientIpHeader::kXForwardedFor:
      // A blank header carries no address: it counts as absent.
      if (all_blank(lines)) return peer;
      return from_forwarded_for(peer, lines, trusted_proxies);
    case ClientIpHeader::kForwarded:
      return from_forwarded(peer, lines, trusted_proxies);
    case ClientIpHeader::kXRealIp:
      if (lines.size() == 1 && trim(lines.front()).empty()) return peer;
      return from_real_ip(lines);
  }
  return peer;
}

}  // namespace spillway::policy
