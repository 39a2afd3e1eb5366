#include "src/policy/ip.h"

#include <algorithm>
#include <cstddef>

#include "src/core/text.h"

namespace spillway::policy {
namespace {

// Values quoted in errors come from clients (X-Forwarded-For), so they are escaped to keep the
// message on one line and cut to a readable length.
std::string in_quotes(std::string_view text) {
  constexpr std::size_t kMaxShown = 80;
  return quote_for_error(text, kMaxShown);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A dotted quad "a.b.c.d": four decimal parts 0-255, no signs, and no leading zeros ("010" could
// mean octal to other tools, so it is refused rather than guessed).
bool parse_ipv4(std::string_view text, std::uint8_t* out) {
  int part = 0;
  std::size_t pos = 0;
  while (true) {
    std::size_t end = text.find('.', pos);
    std::string_view digits =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (part >= 4 || digits.empty() || digits.size() > 3) return false;
    if (!std::all_of(digits.begin(), digits.end(), is_digit)) return false;
    if (digits.size() > 1 && digits[0] == '0') return false;
    int value = 0;
    for (char c : digits) value = value * 10 + (c - '0');
    if (value > 255) return false;
    out[part++] = static_cast<std::uint8_t>(value);
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return part == 4;
}

// Groups of 1-4 hex digits separated by ':' (no "::" inside). When `allow_ipv4_tail`, the last
// group may be a dotted quad, which counts as two groups. Appends the 16-bit groups to `groups`.
bool parse_hex_groups(std::string_view text, bool allow_ipv4_tail,
                      std::vector<std::uint16_t>& groups) {
  if (text.empty()) return true;
  std::size_t pos = 0;
  while (true) {
    std::size_t end = text.find(':', pos);
    const bool last = end == std::string_view::npos;
    std::string_view group = text.substr(pos, last ? std::string_view::npos : end - pos);
    if (last && allow_ipv4_tail && group.find('.') != std::string_view::npos) {
      std::uint8_t v4[4];
      if (!parse_ipv4(group, v4)) return false;
      groups.push_back(static_cast<std::uint16_t>(v4[0] << 8 | v4[1]));
      groups.push_back(static_cast<std::uint16_t>(v4[2] << 8 | v4[3]));
      return true;
    }
    if (group.empty() || group.size() > 4) return false;
    unsigned value = 0;
    for (char c : group) {
      int digit = hex_value(c);
      if (digit < 0) return false;
      value = value << 4 | static_cast<unsigned>(digit);
    }
    groups.push_back(static_cast<std::uint16_t>(value));
    if (last) return true;
    pos = end + 1;
  }
}

// RFC 4291 section 2.2 text forms: eight groups, or fewer with one "::" standing for one or more
// zero groups, optionally ending in an embedded dotted quad.
bool parse_ipv6(std::string_view text, std::array<std::uint8_t, 16>& bytes) {
  std::vector<std::uint16_t> head;
  std::vector<std::uint16_t> tail;
  const std::size_t gap = text.find("::");
  if (gap == std::string_view::npos) {
    if (!parse_hex_groups(text, true, head) || head.size() != 8) return false;
  } else {
    std::string_view left = text.substr(0, gap);
    std::string_view right = text.substr(gap + 2);
    if (right.find("::") != std::string_view::npos) return false;
    if (!parse_hex_groups(left, false, head) || !parse_hex_groups(right, true, tail)) return false;
    if (head.size() + tail.size() > 7) return false;
  }
  std::array<std::uint16_t, 8> groups{};
  std::copy(head.begin(), head.end(), groups.begin());
  std::copy(tail.begin(), tail.end(), groups.end() - static_cast<std::ptrdiff_t>(tail.size()));
  for (std::size_t i = 0; i < 8; ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(groups[i] >> 8);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(groups[i] & 0xff);
  }
  return true;
}

bool is_ipv4_mapped(const std::array<std::uint8_t, 16>& bytes) {
  for (std::size_t i = 0; i < 10; ++i) {
    if (bytes[i] != 0) return false;
  }
  return bytes[10] == 0xff && bytes[11] == 0xff;
}

// Clears every bit after the first `bits` bits of the address.
void mask_to(IpAddress& ip, int bits) {
  const int width = ip.v6 ? 128 : 32;
  for (int byte = 0; byte < width / 8; ++byte) {
    const int keep = std::clamp(bits - byte * 8, 0, 8);
    const unsigned mask = keep == 0 ? 0u : (0xffu << (8 - keep)) & 0xffu;
    ip.bytes[static_cast<std::size_t>(byte)] &= static_cast<std::uint8_t>(mask);
  }
  for (int byte = width / 8; byte < 16; ++byte) ip.bytes[static_cast<std::size_t>(byte)] = 0;
}

std::string format_ipv4(const IpAddress& ip) {
  std::string out;
  for (std::size_t i = 0; i < 4; ++i) {
    if (i > 0) out.append(1, '.');
    out.append(std::to_string(ip.bytes[i]));
  }
  return out;
}

// RFC 5952: lower-case hex without leading zeros; the longest run of two or more zero groups
// (the first such run on a tie) is written "::".
std::string format_ipv6(const IpAddress& ip) {
  std::array<unsigned, 8> groups{};
  for (std::size_t i = 0; i < 8; ++i)
    groups[i] = unsigned{ip.bytes[2 * i]} << 8 | ip.bytes[2 * i + 1];
  int best_start = -1;
  int best_length = 1;
  for (int i = 0; i < 8;) {
    if (groups[static_cast<std::size_t>(i)] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && groups[static_cast<std::size_t>(j)] == 0) ++j;
    if (j - i > best_length) {
      best_start = i;
      best_length = j - i;
    }
    i = j;
  }
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == best_start) {
      out.append("::");
      i += best_length - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out.append(1, ':');
    const unsigned group = groups[static_cast<std::size_t>(i)];
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      const unsigned digit = (group >> shift) & 0xf;
      if (digit == 0 && !started && shift > 0) continue;
      started = true;
      out.append(1, kHex[digit]);
    }
  }
  return out;
}

}  // namespace

Result<IpAddress> parse_ip(std::string_view text) {
  if (text.empty()) return invalid_argument("IP address is empty");
  if (text.find('%') != std::string_view::npos) {
    return invalid_argument("IP address " + in_quotes(text) +
                            " has a zone (%...), which is not accepted");
  }
  if (text.front() == '[' || text.back() == ']') {
    return invalid_argument("IP address " + in_quotes(text) + " must be written without brackets");
  }
  IpAddress ip;
  if (text.find(':') == std::string_view::npos) {
    if (!parse_ipv4(text, ip.bytes.data())) {
      return invalid_argument("IP address " + in_quotes(text) +
                              " is not a dotted IPv4 address (four numbers 0-255, no leading "
                              "zeros) or an IPv6 address");
    }
    return ip;
  }
  if (!parse_ipv6(text, ip.bytes)) {
    return invalid_argument("IP address " + in_quotes(text) + " is not a valid IPv6 address");
  }
  if (is_ipv4_mapped(ip.bytes)) {
    std::copy(ip.bytes.begin() + 12, ip.bytes.end(), ip.bytes.begin());
    std::fill(ip.bytes.begin() + 4, ip.bytes.end(), std::uint8_t{0});
    return ip;
  }
  ip.v6 = true;
  return ip;
}

// Prefix lengths outside 1..128 are clamped into that range (config validation keeps them there).
std::string ip_key(const IpAddress& ip, int v6_prefix_bits) {
  if (!ip.v6) return format_ipv4(ip);
  const int bits = std::clamp(v6_prefix_bits, 1, 128);
  IpAddress network = ip;
  mask_to(network, bits);
  return format_ipv6(network) + "/" + std::to_string(bits);
}

// The network address is stored with the host bits cleared ("10.1.2.3/8" becomes 10.0.0.0/8).
Result<Cidr> parse_cidr(std::string_view text) {
  const std::size_t slash = text.find('/');
  Result<IpAddress> address = parse_ip(text.substr(0, slash));
  if (!address) {
    return invalid_argument("CIDR " + in_quotes(text) + ": " + address.error().message);
  }
  // An IPv4-mapped network ("::ffff:10.0.0.0/104") is written with IPv6 prefix lengths.
  const bool written_as_v6 = text.substr(0, slash).find(':') != std::string_view::npos;
  Cidr cidr{.network = *address, .prefix_bits = address->v6 ? 128 : 32};
  if (slash != std::string_view::npos) {
    const int width = written_as_v6 ? 128 : 32;
    std::string_view digits = text.substr(slash + 1);
    const bool numeric = !digits.empty() && digits.size() <= 3 &&
                         std::all_of(digits.begin(), digits.end(), is_digit);
    int bits = 0;
    if (numeric) {
      for (char c : digits) bits = bits * 10 + (c - '0');
    }
    if (!numeric || bits > width) {
      return invalid_argument("CIDR " + in_quotes(text) +
                              " must end in a prefix length from /0 to /" + std::to_string(width));
    }
    if (!address->v6 && written_as_v6) {
      if (bits < 96) {
        return invalid_argument(
            "CIDR " + in_quotes(text) +
            " is an IPv4-mapped network and needs a prefix length of /96 or more");
      }
      bits -= 96;
    }
    cidr.prefix_bits = bits;
  }
  mask_to(cidr.network, cidr.prefix_bits);
  return cidr;
}

bool cidr_contains(const Cidr& cidr, const IpAddress& ip) {
  if (cidr.network.v6 != ip.v6) return false;
  IpAddress masked = ip;
  mask_to(masked, cidr.prefix_bits);
  IpAddress network = cidr.network;
  mask_to(network, cidr.prefix_bits);
  return masked == network;
}

}  // namespace spillway::policy
