// ASCII case folding for HTTP tokens and header names (which are ASCII): no locale, no lookup.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace spillway::server {

inline char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Equal ignoring ASCII case.
inline bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace spillway::server
