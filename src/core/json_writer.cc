// append_json_string and JsonWriter (see json_writer.h).
#include "src/core/json_writer.h"

#include <charconv>
#include <cmath>

namespace spillway {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t plain_from = 0;  // the bytes since the last escape go out in one append
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain_from, i - plain_from);
    if (c < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    }
    plain_from = i + 1;
  }
  out.append(text.data() + plain_from, text.size() - plain_from);
  out.push_back('"');
}

JsonWriter& JsonWriter::fixed(double number, int decimals) {
  if (!std::isfinite(number)) return null();
  before_value();
  char text[400];  // DBL_MAX has 309 digits before the point
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, number, std::chars_format::fixed, decimals);
  out_.append(error == std::errc{} ? std::string_view(text, end) : std::string_view("null"));
  return *this;
}

JsonWriter& JsonWriter::plain(double number) {
  if (!std::isfinite(number)) return null();
  before_value();
  char text[400];  // the longest shortest fixed spelling of a double is 327 characters
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, number, std::chars_format::fixed);
  out_.append(error == std::errc{} ? std::string_view(text, end) : std::string_view("null"));
  return *this;
}

JsonWriter& JsonWriter::members(std::string_view json_members) {
  if (json_members.empty()) return *this;
  if (level_has_items()) out_.push_back(',');
  mark_level();
  out_.append(json_members);
  return *this;
}

}  // namespace spillway
