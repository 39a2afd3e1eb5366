// Client IP handling for the edge layer (docs/SPEC.md §6).
//
// - IPv4 keys by the whole address; IPv6 by its prefix (/64 by default, configurable), so rotating
//   addresses inside one /64 does not escape the limit; IPv4-mapped IPv6 (::ffff:a.b.c.d) counts
//   as the IPv4 address.
// - Which header names the client behind a trusted proxy: client_address.h.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"

namespace spillway::policy {

struct IpAddress {
  bool v6 = false;  // false: the first 4 bytes hold the IPv4 address
  std::array<std::uint8_t, 16> bytes{};
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// Parses dotted IPv4 or any RFC 4291 IPv6 text form (with "::", embedded IPv4, an optional
// "%zone" is rejected). IPv4-mapped IPv6 becomes IPv4. Errors quote the input.
Result<IpAddress> parse_ip(std::string_view text);

// The edge key of an address: "203.0.113.7" for IPv4; for IPv6 the first `v6_prefix_bits` bits,
// canonical lower-case hex, written "2001:db8:1:2::/64".
std::string ip_key(const IpAddress& ip, int v6_prefix_bits = 64);

// "10.0.0.0/8", "2001:db8::/32" or a single address (/32 or /128).
struct Cidr {
  IpAddress network;
  int prefix_bits = 0;
  friend bool operator==(const Cidr&, const Cidr&) = default;
};
Result<Cidr> parse_cidr(std::string_view text);
bool cidr_contains(const Cidr& cidr, const IpAddress& ip);

}  // namespace spillway::policy
