// Trimming, ASCII case folding, error-message quoting and UTF-8 validation (see text.h).
#include "src/core/text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

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

std::string ascii_lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

bool ascii_istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && ascii_iequals(text.substr(0, prefix.size()), prefix);
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

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  const std::size_t length = lead < 0x80                    ? 1
                             : lead >= 0xc2 && lead <= 0xdf ? 2
                             : lead >= 0xe0 && lead <= 0xef ? 3
                             : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                            : 0;
  if (length <= 1) return length;
  if (at + length > text.size()) return 0;
  // The second byte's range rules out overlong forms, surrogates and code points past U+10FFFF;
  // the bytes after it are plain continuation bytes.
  const unsigned char low = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
  const unsigned char high = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if ((byte(at + k) & 0xc0) != 0x80) return 0;
  }
  return length;
}

std::string utf8_or_escaped(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
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

std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    unsigned value = 0;
    const char* begin = text.data() + i + 1;
    const char* end = begin + std::min<std::size_t>(2, text.size() - i - 1);
    const auto [ptr, ec] = std::from_chars(begin, end, value, 16);
    if (end - begin != 2 || ec != std::errc() || ptr != end) return std::nullopt;
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

void append_base64url_128(std::string& out, const unsigned char* bytes16) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  // 16 bytes = 128 bits: 21 groups of 6 bits and 2 bits left over (the last character).
  std::uint32_t bits = 0;
  int held = 0;
  for (int i = 0; i < 16; ++i) {
    bits = (bits << 8) | bytes16[i];
    held += 8;
    while (held >= 6) {
      held -= 6;
      out.push_back(kAlphabet[(bits >> held) & 0x3f]);
    }
  }
  out.push_back(kAlphabet[(bits << (6 - held)) & 0x3f]);
}

}  // namespace spillway
