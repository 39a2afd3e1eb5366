#include "src/server/json_text.h"

#include <cstddef>

#include "src/core/text.h"

namespace spillway::server {

// Every byte that is not part of valid UTF-8 becomes "\xNN", so that a message quoting client
// bytes (a path, a header) is still valid JSON text once serialized.
std::string utf8_or_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto b = static_cast<unsigned char>(text[i]);
      out.append("\\x").append(1, kHex[b >> 4]).append(1, kHex[b & 0xf]);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[(c >> 4) & 0xf]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

std::string error_body(std::string_view message) {
  std::string out = "{\"error\":";
  append_json_string(out, utf8_or_escaped(message));
  out.push_back('}');
  return out;
}

}  // namespace spillway::server
