#include "src/pages/html.h"

#include "src/core/text.h"

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
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      clean += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      const auto b = static_cast<unsigned char>(text[i]);
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

}  // namespace spillway::pages
