// The RFC 7239 `Forwarded` header, read for its `for=` parameters (docs/SPEC.md §6).
//
// - parse_forwarded() checks the syntax of the whole field value (all field lines joined with
//   ", "): comma-separated elements, each of `;`-separated `name=value` pairs, names being tokens
//   (compared case-insensitively), values a token or a quoted-string. Empty elements and empty
//   pairs are ignored (RFC 9110 §5.6.1); one of RFC 7239's parameters (for, by, host, proto)
//   named twice in one element is an error (§4), since two readers could then believe different
//   values; other names are not tracked (parsing stays linear in the header's length).
// - parse_forwarded_node() reads one `for=` value (RFC 7239 §6): an IPv4 address, or an IPv6
//   address in brackets, with an optional port; or `unknown`, or an obfuscated identifier
//   (`_hidden`, §6.3). Ports (numeric or obfuscated) are checked, then dropped.
//
// Errors name the header and quote the offending text (escaped, cut to a readable length).
// Pure functions; thread-safe. Results own their strings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/policy/ip.h"

namespace spillway::policy {

// One forwarded-element, reduced to what the client address needs.
struct ForwardedElement {
  std::optional<std::string> for_node;  // the `for` value, unquoted; nullopt: no `for` parameter
};

// The elements of a Forwarded field value in order, left to right (empty ones left out).
Result<std::vector<ForwardedElement>> parse_forwarded(std::string_view value);

// A port written in decimal: 1 to 5 digits, at most 65535 (also for X-Forwarded-For entries).
bool is_port_number(std::string_view text);

// The address a `for=` value names; nullopt for `unknown` and obfuscated identifiers.
Result<std::optional<IpAddress>> parse_forwarded_node(std::string_view node);

}  // namespace spillway::policy
