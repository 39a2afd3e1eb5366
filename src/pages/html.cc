#include "src/pages/html.h"

#include <cstdio>

namespace spillway::pages {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string xml_text(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = byte(i);
    std::size_t length = b < 0x80                 ? 1
                         : b >= 0xc2 && b <= 0xdf ? 2
                         : b >= 0xe0 && b <= 0xef ? 3
                         : b >= 0xf0 && b <= 0xf4 ? 4
                                                  : 0;
    if (length > 1) {
      if (i + length > text.size()) {
        length = 0;
      } else {
        // The second byte's range rules out overlong forms, surrogates and code points past
        // U+10FFFF; the others are continuation bytes.
        const unsigned char low = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
        const unsigned char high = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
        if (byte(i + 1) < low || byte(i + 1) > high) length = 0;
        for (std::size_t k = 2; k < length; ++k) {
          if ((byte(i + k) & 0xc0) != 0x80) length = 0;
        }
      }
    }
    if (length == 0) {
      clean += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      if (length > 1 || b >= 0x20 || b == '\t' || b == '\n' || b == '\r') {
        clean.append(text.substr(i, length));
      }
      i += length;
    }
  }
  return html_escape(clean);
}

std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 8);
  for (std::size_t i = 0; i < json.size(); ++i) {
    out += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace spillway::pages
