// Who the client of a `/v1/auth` request is (docs/SPEC.md §6): the connection's peer, unless the
// peer is a trusted proxy, in which case the one header the operator named
// (`server.client_ip_header`) says who it forwarded the request for. No other header is read, so
// a header the proxies do not set (and a client therefore can) is never believed.
//
// The header arrives as all its field lines, in order (RFC 9110 §5.3: several lines of one name
// are one comma-separated list, and a proxy may add its own line after the client's):
// - x-forwarded-for: the lines joined with ", ", walked from the right; the first entry that is
//   not a trusted proxy is the client; if every entry is trusted, the leftmost. Entries may carry
//   a port (`203.0.113.7:5555`, `[2001:db8::1]:443`), which is dropped; a bare IPv6 address is
//   never read as address:port. Entries left of the client are not read.
// - forwarded (RFC 7239): the lines joined, the whole value well-formed (forwarded.h), then the
//   elements' `for=` walked from the right like X-Forwarded-For. A hop that cannot be identified
//   (`for=unknown`, an obfuscated `for=_hidden`, or an element without `for`) stops the walk and
//   the client is keyed by the nearest address known on its right: the trusted proxy that
//   reported it (the peer, or the last trusted entry walked). Everyone behind that hop then
//   shares the proxy's budget: an unidentifiable client is never a fresh key, and nothing written
//   further left (by the client) is believed.
// - x-real-ip: exactly one line holding one address (a port is dropped); two or more lines are
//   an error (the proxy sends one; another came from the client).
// A header absent or blank on every line: the peer. Anything malformed that is read: an error
// that names the header and quotes the value.
//
// Pure functions; thread-safe. Nothing is kept after a call returns.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "spillway/error.h"
#include "src/policy/ip.h"

namespace spillway::policy {

// The header trusted proxies set, as `server.client_ip_header` names it.
enum class ClientIpHeader { kXForwardedFor, kForwarded, kXRealIp };

// "x-forwarded-for", "forwarded", "x-real-ip": the setting's value and the lower-case header name.
std::string_view client_ip_header_name(ClientIpHeader header);
// The inverse, case-insensitive; nullopt for anything else.
std::optional<ClientIpHeader> parse_client_ip_header(std::string_view text);

// `lines`: every field line of the named header in the order received (none when absent).
Result<IpAddress> client_address(const IpAddress& peer, ClientIpHeader header,
                                 std::span<const std::string_view> lines,
                                 const std::vector<Cidr>& trusted_proxies);

// Whether `peer` is in one of the trusted proxies' networks.
bool is_trusted_proxy(const IpAddress& peer, const std::vector<Cidr>& trusted_proxies);

// An X-Forwarded-For or X-Real-IP entry: an address, `v4:port`, `[v6]` or `[v6]:port` (port
// 0-65535, dropped). Errors quote the entry.
Result<IpAddress> parse_forwarded_for_entry(std::string_view entry);

}  // namespace spillway::policy
