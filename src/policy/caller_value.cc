#include "src/policy/caller_value.h"

#include "src/core/text.h"
#include "src/policy/endpoint_path.h"
#include "src/policy/ip.h"

namespace spillway::policy {
namespace {

std::unexpected<Error> bad_ip(std::string_view text, int ipv6_prefix, const std::string& why) {
  return std::unexpected(Error{Errc::kInvalidArgument,
                               "\"ip\" " + quote_for_error(text, 80) + " is not an IP address (" +
                                   why +
                                   "; expected an IPv4 or IPv6 address, e.g. 203.0.113.9 "
                                   "or 2001:db8::1, IPv6 keyed by its /" +
                                   std::to_string(ipv6_prefix) + ")",
                               kIpAttribute});
}

}  // namespace

Result<std::string> ip_attribute_key(std::string_view text, int ipv6_prefix, bool key_form) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    auto ip = parse_ip(text);
    if (!ip) return bad_ip(text, ipv6_prefix, ip.error().message);
    return ip_key(*ip, ipv6_prefix);
  }
  if (!key_form) return bad_ip(text, ipv6_prefix, "a request's address has no prefix length");
  auto cidr = parse_cidr(text);
  if (!cidr) return bad_ip(text, ipv6_prefix, cidr.error().message);
  const int wanted = cidr->network.v6 ? ipv6_prefix : 32;
  if (cidr->prefix_bits != wanted) {
    return bad_ip(text, ipv6_prefix,
                  "a key's prefix length is /" + std::to_string(wanted) + ", not /" +
                      std::to_string(cidr->prefix_bits));
  }
  return ip_key(cidr->network, ipv6_prefix);
}

Result<std::string> path_attribute_key(std::string_view text, std::string_view attribute) {
  auto path = canonical_path(text, true);
  if (!path) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "\"" + std::string(attribute) + "\" " + quote_for_error(text, 80) +
                                     " is not a request path (" + path.error().message +
                                     "; expected a path such as /search)",
                                 std::string(attribute)});
  }
  return path;
}

}  // namespace spillway::policy
