#include "src/cli/printable_url.h"

namespace spillway::cli {

std::string printable_url(std::string_view url) {
  std::string out(url);
  // userinfo: between "://" and the last '@' before the query, as the URL parser reads it (a raw
  // '/' or '@' in a password is part of it); the password after its first ':'.
  if (const std::size_t scheme = out.find("://"); scheme != std::string::npos) {
    const std::size_t start = scheme + 3;
    const std::size_t end = out.find('?', start);
    const std::size_t at = out.rfind('@', end == std::string::npos ? std::string::npos : end - 1);
    if (at != std::string::npos && at >= start) {
      const std::size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // "password=" query parameters (unix:///path?password=…).
  if (const std::size_t query = out.find('?'); query != std::string::npos) {
    for (std::size_t at = out.find("password=", query); at != std::string::npos;
         at = out.find("password=", at + 1)) {
      if (out[at - 1] != '?' && out[at - 1] != '&') continue;
      const std::size_t value = at + 9;
      const std::size_t end = out.find_first_of("&#", value);
      out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
    }
  }
  return out;
}

}  // namespace spillway::cli
