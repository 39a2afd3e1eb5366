// One spelling per caller: how the request path writes an attribute's value into a layer's key
// (docs/SPEC.md §5.2, §6), for every path that names a caller. The decision endpoints use it on
// the way in (`/v1/check`'s "ip"), and the admin API, `spillway inspect` and the policy's own
// reset keys (Policy::keys_of_caller) use the same functions, so a tenant record, a counter reset
// or an inspection given another spelling of a caller reaches the key its requests use, or is
// refused with the form expected.
//   "ip"         an IP address: IPv4 whole ("203.0.113.9"), an IPv4-mapped IPv6 address as its
//                IPv4 ("::ffff:203.0.113.9" -> "203.0.113.9"), IPv6 by its first `ipv6_prefix`
//                bits ("2001:DB8:1:2::1" -> "2001:db8:1:2::/64"). Where a key is given by an
//                operator (not by a request), the key form itself is taken too: "10.0.0.1/32",
//                "2001:db8:1:2::/64" (the prefix length must be the configured one).
//   a path       its canonical form (src/policy/endpoint_path.h), ASCII case folded as the
//                layers' keys fold it.
//   any other    as given.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::policy {

// The attribute the server fills with the client's address (and that POST /v1/check parses).
inline constexpr char kIpAttribute[] = "ip";

// The "ip" attribute's key. `key_form`: also accept "<address>/<bits>" when the bits are those
// the key would carry (/32 for IPv4, /ipv6_prefix for IPv6). Errors (kInvalidArgument, field
// "ip") quote the text and name the form expected.
Result<std::string> ip_attribute_key(std::string_view text, int ipv6_prefix, bool key_form = false);

// A path attribute's key: canonical_path(text, fold_case: true); errors (field `attribute`) name
// the form expected.
Result<std::string> path_attribute_key(std::string_view text, std::string_view attribute);

}  // namespace spillway::policy
