#include "src/policy/forwarded.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "src/core/text.h"

namespace spillway::policy {
namespace {

constexpr std::size_t kMaxShown = 80;  // bytes of a client's value quoted in an error

std::string quoted(std::string_view text) { return quote_for_error(text, kMaxShown); }

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) {
  return is_alnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 9110 §5.6.4: qdtext and the byte after a backslash may be any visible character, space,
// tab or obs-text (0x80-0xff), never another control character.
bool is_quotable(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte == '\t' || (byte >= 0x20 && byte != 0x7f);
}

// RFC 7239 §6.3: "_" followed by one or more of ALPHA / DIGIT / "." / "_" / "-".
bool is_obfuscated(std::string_view text) {
  return text.size() > 1 && text.front() == '_' &&
         std::all_of(text.begin() + 1, text.end(),
                     [](char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; });
}

// RFC 7239 §6: node-port = port / obfport, port = 1*5DIGIT (at most 65535 here).
bool is_node_port(std::string_view text) { return is_obfuscated(text) || is_port_number(text); }

// Reads the whole field value left to right. `at` is the next byte to read.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<std::vector<ForwardedElement>> run() {
    std::vector<ForwardedElement> elements;
    ForwardedElement current;
    // The current element: whether it has a parameter, and which of RFC 7239's four it has had
    // (a bit each; other names are not remembered, so a long element costs linear time).
    bool has_parameter = false;
    unsigned seen = 0;
    while (true) {
      skip_blanks();
      if (at_ == text_.size() || text_[at_] == ',') {
        if (has_parameter) elements.push_back(std::move(current));
        current = ForwardedElement{};
        has_parameter = false;
        seen = 0;
        if (at_ == text_.size()) return elements;
        ++at_;
        continue;
      }
      if (text_[at_] == ';') {
        ++at_;
        continue;
      }
      const std::size_t start = at_;
      const std::string_view name = token();
      if (name.empty()) return fail("expected a parameter name", start);
      if (at_ == text_.size() || text_[at_] != '=') {
        return fail("parameter " + quoted(name) + " has no \"=value\"", start);
      }
      ++at_;
      Result<std::string> value = parameter_value();
      if (!value) return std::unexpected(value.error());
      const std::string lowered = ascii_lowered(name);
      unsigned bit = 0;
      for (unsigned i = 0; i < 4; ++i) {
        if (lowered == std::array<std::string_view, 4>{"for", "by", "host", "proto"}[i]) {
          bit = 1u << i;
        }
      }
      if ((seen & bit) != 0) {
        return fail("parameter " + quoted(name) + " appears twice in one element", start);
      }
      seen |= bit;
      has_parameter = true;
      if (lowered == "for") current.for_node = std::move(*value);
      skip_blanks();
      if (at_ < text_.size() && text_[at_] != ';' && text_[at_] != ',') {
        return fail("expected \";\", \",\" or the end after a value", at_);
      }
    }
  }

 private:
  void skip_blanks() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }

  std::string_view token() {
    const std::size_t start = at_;
    while (at_ < text_.size() && is_tchar(text_[at_])) ++at_;
    return text_.substr(start, at_ - start);
  }

  // A token, or a quoted-string returned without its quotes and backslashes.
  Result<std::string> parameter_value() {
    const std::size_t start = at_;
    if (at_ == text_.size() || text_[at_] != '"') {
      const std::string_view value = token();
      if (value.empty()) return fail("expected a token or a quoted string as the value", start);
      return std::string(value);
    }
    ++at_;
    std::string value;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return value;
      if (c == '\\') {
        if (at_ == text_.size()) break;
        if (!is_quotable(text_[at_])) return fail("a control character in a quoted string", at_);
        value.push_back(text_[at_++]);
        continue;
      }
      if (!is_quotable(c)) return fail("a control character in a quoted string", at_ - 1);
      value.push_back(c);
    }
    return fail("a quoted string is not closed", start);
  }

  // "Forwarded "<value>": <what> at byte N (at "<the rest>")".
  std::unexpected<Error> fail(const std::string& what, std::size_t where) const {
    return invalid_argument("Forwarded " + quoted(text_) + ": " + what + " at byte " +
                            std::to_string(where) + " (" + quoted(text_.substr(where)) + ")");
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

bool is_port_number(std::string_view text) {
  if (text.empty() || text.size() > 5) return false;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  long value = 0;
  for (char c : text) value = value * 10 + (c - '0');
  return value <= 65535;
}

Result<std::vector<ForwardedElement>> parse_forwarded(std::string_view value) {
  return Reader(value).run();
}

Result<std::optional<IpAddress>> parse_forwarded_node(std::string_view node) {
  const auto bad = [&](std::string_view why) {
    return invalid_argument("Forwarded for=" + quoted(node) + " " + std::string(why));
  };
  std::string_view name = node;
  std::optional<std::string_view> port;
  if (node.starts_with('[')) {
    const std::size_t close = node.find(']');
    if (close == std::string_view::npos) return bad("opens \"[\" without closing it");
    name = node.substr(1, close - 1);
    const std::string_view rest = node.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("has text after \"]\" that is not \":port\"");
      port = rest.substr(1);
    }
    // Brackets hold IPv6 only (RFC 7239 §6: "[" IPv6address "]").
    Result<IpAddress> address = parse_ip(name);
    if (!address || name.find(':') == std::string_view::npos) {
      return bad("does not hold an IPv6 address in its brackets");
    }
    if (port && !is_node_port(*port)) return bad("has a port that is not 0-65535 or _obfuscated");
    return std::optional<IpAddress>(*address);
  }
  const std::size_t colon = node.find(':');
  if (colon != std::string_view::npos) {
    if (node.find(':', colon + 1) != std::string_view::npos) {
      return bad(
          "is not a node: an IPv6 address must be written in brackets, in quotes "
          "(for=\"[2001:db8::1]\")");
    }
    name = node.substr(0, colon);
    port = node.substr(colon + 1);
    if (!is_node_port(*port)) return bad("has a port that is not 0-65535 or _obfuscated");
  }
  const std::string lowered = ascii_lowered(name);
  if (lowered == "unknown" || is_obfuscated(name)) return std::optional<IpAddress>();
  Result<IpAddress> address = parse_ip(name);
  if (!address) {
    return bad(
        "is not an IPv4 address, a bracketed IPv6 address, \"unknown\" or an _obfuscated "
        "identifier");
  }
  return std::optional<IpAddress>(*address);
}

}  // namespace spillway::policy
