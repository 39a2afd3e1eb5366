// The address `spillway serve` listens on, "host:port": one parser for the config file's
// server.listen and for the --listen flag, so both accept the same text with the same errors.
//
// Accepted: "127.0.0.1:8080", "0.0.0.0:8080", "localhost:8080", "[::1]:8080". An IPv6 host must be
// in brackets; an IPv4 host must be a valid dotted quad; a host name is letters, digits, '.' and
// '-'. The port is 0 to 65535, written in digits; 0 means any free port (tests use it).
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::policy {

struct ListenAddress {
  std::string host;        // without brackets: "127.0.0.1", "::1", "localhost"
  std::uint16_t port = 0;  // 0: any free port
  friend bool operator==(const ListenAddress&, const ListenAddress&) = default;
};

// Errors quote the text and say what is wrong with it, e.g. "\"::1:8080\": an IPv6 host must be
// in brackets, e.g. \"[::1]:8080\"".
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace spillway::policy
