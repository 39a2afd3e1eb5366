#include "src/policy/endpoint_path.h"

#include "src/core/text.h"

namespace spillway::policy {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

void append_escaped(std::string& out, unsigned char c) {
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xf]);
}

std::unexpected<Error> bad_path(std::string_view raw, const std::string& why) {
  return std::unexpected(
      Error{Errc::kInvalidArgument, "path " + quote_for_error(raw, 200) + " " + why, "endpoint"});
}

// Appends one segment to `out`, escapes normalised and path parameters dropped; an error names
// the problem.
Result<void> append_segment(std::string& out, std::string_view raw_path, std::string_view segment,
                            bool fold_case) {
  for (std::size_t i = 0; i < segment.size(); ++i) {
    const auto c = static_cast<unsigned char>(segment[i]);
    if (c == ';') break;  // path parameters: the rest of the segment
    if (is_control(c) || c == ' ') {
      return bad_path(raw_path, "has a control character or space at byte " +
                                    std::to_string(segment.data() - raw_path.data() + i));
    }
    if (c == '%') {
      const int high = i + 1 < segment.size() ? hex_value(segment[i + 1]) : -1;
      const int low = i + 2 < segment.size() ? hex_value(segment[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return bad_path(raw_path, "has a '%' that is not followed by two hex digits");
      }
      const auto decoded = static_cast<unsigned char>(high * 16 + low);
      if (is_control(decoded)) {
        return bad_path(raw_path,
                        "escapes a control character (" + std::string(segment.substr(i, 3)) + ")");
      }
      i += 2;
      if (is_unreserved(decoded)) {
        const auto byte = static_cast<char>(decoded);
        out.push_back(fold_case ? ascii_lower(byte) : byte);
      } else {
        append_escaped(out, decoded);
      }
      continue;
    }
    if (c > 0x7e) {
      append_escaped(out, c);
    } else {
      out.push_back(fold_case ? ascii_lower(static_cast<char>(c)) : static_cast<char>(c));
    }
  }
  return {};
}

}  // namespace

// Builds the result in one string: each segment is appended after a '/', then taken back when
// it turns out empty or "." (nothing) or ".." (it and the segment before it).
Result<std::string> canonical_path(std::string_view raw, bool fold_case) {
  std::string_view path = raw.substr(0, raw.find_first_of("?#"));
  if (path.empty()) return bad_path(raw, "is empty (it must start with '/')");
  if (path.front() != '/') return bad_path(raw, "must start with '/'");
  std::string out;
  out.reserve(path.size());
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::size_t slash = out.size();
    out.push_back('/');
    if (Result<void> ok = append_segment(out, raw, path.substr(start, end - start), fold_case);
        !ok) {
      return std::unexpected(ok.error());
    }
    const std::string_view segment = std::string_view(out).substr(slash + 1);
    if (segment.empty() || segment == ".") {
      out.resize(slash);  // a repeated or trailing slash, or "." names no segment
    } else if (segment == "..") {
      out.resize(slash);
      out.resize(out.empty() ? 0 : out.rfind('/'));  // and the one before it, if any
    }
    start = end + 1;
  }
  if (out.empty()) out = "/";
  return out;
}

Result<std::string> canonical_method(std::string_view raw) {
  if (raw.empty() || raw.size() > 32) {
    return invalid_argument("method " + quote_for_error(raw, 40) + " must be 1 to 32 characters");
  }
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    const bool tchar = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!tchar) {
      return invalid_argument("method " + quote_for_error(raw, 40) +
                              " must be a token (letters, digits, !#$%&'*+-.^_`|~)");
    }
    out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  }
  return out;
}

}  // namespace spillway::policy
