#include "src/server/json_text.h"

#include <cstddef>

namespace spillway::server {

// Every byte that is not part of valid UTF-8 becomes "\xNN", so that a message quoting client
// bytes (a path, a header) is still valid JSON text once serialized.
std::string utf8_or_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
    const unsigned char b = byte(i);
    std::size_t length = 0;  // of a valid sequence starting at i, 0 if none
    if (b < 0x80) {
      length = 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      length = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
    }
    if (length > 1) {
      if (i + length > text.size()) {
        length = 0;
      } else {
        // The second byte's range excludes overlong forms, surrogates and code points > U+10FFFF.
        const unsigned char second = byte(i + 1);
        const unsigned char low = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
        const unsigned char high = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
        if (second < low || second > high) length = 0;
        for (std::size_t k = 2; k < length; ++k) {
          if ((byte(i + k) & 0xc0) != 0x80) length = 0;
        }
      }
    }
    if (length == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
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
