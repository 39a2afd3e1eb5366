// Trimming and error-message quoting (see text.h).
#include "src/core/text.h"

namespace spillway {

std::string_view trim_front(std::string_view text, std::string_view chars) {
  while (!text.empty() && chars.find(text.front()) != std::string_view::npos) {
    text.remove_prefix(1);
  }
  return text;
}

std::string_view trim_back(std::string_view text, std::string_view chars) {
  while (!text.empty() && chars.find(text.back()) != std::string_view::npos) {
    text.remove_suffix(1);
  }
  return text;
}

std::string_view trim(std::string_view text, std::string_view chars) {
  return trim_back(trim_front(text, chars), chars);
}

std::string escape_control(std::string_view text, bool quotes) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (quotes && (c == '"' || c == '\\')) {
      out.append(1, '\\').append(1, ch);
    } else if (c < 0x20 || c == 0x7f) {
      out.append("\\x").append(1, kHex[c >> 4]).append(1, kHex[c & 0xf]);
    } else {
      out.append(1, ch);
    }
  }
  return out;
}

std::string quote_for_error(std::string_view text, std::size_t max_shown) {
  std::string out = "\"";
  out.append(escape_control(text.substr(0, max_shown), true));
  if (text.size() > max_shown) out.append("...");
  out.append(1, '"');
  return out;
}

}  // namespace spillway
