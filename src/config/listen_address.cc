// parse_listen_address (see listen_address.h).
#include "src/config/listen_address.h"

#include <algorithm>
#include <charconv>

#include "src/core/text.h"
#include "src/policy/ip.h"

namespace spillway::policy {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Letters, digits, '.' and '-'; and when it is all digits and dots, a valid IPv4 address.
bool is_host(std::string_view host) {
  const bool name_chars = std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' || c == '-';
  });
  const bool numeric =
      std::all_of(host.begin(), host.end(), [](char c) { return is_digit(c) || c == '.'; });
  return name_chars && (!numeric || parse_ip(host).has_value());
}

// Digits only (no sign, no blanks), 0 to 65535.
bool parse_port(std::string_view text, std::uint16_t& port) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) return false;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > 65535) return false;
  port = static_cast<std::uint16_t>(value);
  return true;
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const std::string quoted = quote_for_error(text);
  ListenAddress address;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid_argument(quoted + " must be host:port, e.g. 127.0.0.1:8080 or \"[::1]:8080\"");
    }
    const std::string_view host = text.substr(1, close - 1);
    if (host.find(':') == std::string_view::npos || !parse_ip(host)) {
      return invalid_argument(quoted + " has no valid IPv6 address in its brackets");
    }
    address.host = std::string(host);
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalid_argument(quoted + " must be host:port, e.g. 127.0.0.1:8080 or \"[::1]:8080\"");
    }
    const std::string_view host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) {
      return invalid_argument(quoted + ": an IPv6 host must be in brackets, e.g. \"[::1]:8080\"");
    }
    if (host.empty()) {
      return invalid_argument(quoted + " needs a host (0.0.0.0 listens on all interfaces)");
    }
    if (!is_host(host)) return invalid_argument(quoted + " has no valid host before the ':'");
    address.host = std::string(host);
    port_text = text.substr(colon + 1);
  }
  if (!parse_port(port_text, address.port)) {
    return invalid_argument(quoted + " needs a port from 0 to 65535 (0: any free port)");
  }
  return address;
}

}  // namespace spillway::policy
