// Text helpers shared by the parsers and their error messages: trimming blanks, ASCII case
// folding, quoting a value inside a one-line error message, and UTF-8 validation (for the JSON and
// SVG writers, which replace what is not UTF-8 each in their own way). Pure functions; thread-safe.
//
// Not for JSON: src/core/json_writer.h escapes for JSON string literals (\u00NN), which is a
// different format from the \xNN used in error messages here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace spillway {

// Spaces and tabs: what trim() removes unless told otherwise.
inline constexpr std::string_view kBlanks = " \t";

// `text` without the characters in `chars` at its front, its back, or both ends.
std::string_view trim_front(std::string_view text, std::string_view chars = kBlanks);
std::string_view trim_back(std::string_view text, std::string_view chars = kBlanks);
std::string_view trim(std::string_view text, std::string_view chars = kBlanks);

// ASCII case folding, with no locale: 'A'-'Z' become 'a'-'z', every other byte stays as it is.
// For what is ASCII by definition: HTTP tokens and header names, Forwarded parameters, request
// paths, words in the config and the Envoy rules.
constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
// `text` with every byte through ascii_lower.
std::string ascii_lowered(std::string_view text);
// Equal ignoring ASCII case.
bool ascii_iequals(std::string_view a, std::string_view b);
// Whether `text` starts with `prefix`, ignoring ASCII case.
bool ascii_istarts_with(std::string_view text, std::string_view prefix);

// `text` with control characters (below 0x20, and 0x7f) written as \xNN, so that a message
// quoting it stays on one line. With `quotes`, '"' and '\' are also escaped with a backslash (for
// text shown between double quotes). Other bytes are kept as they are.
std::string escape_control(std::string_view text, bool quotes);

// `text` as a value quoted in an error message: in double quotes, escaped by escape_control(text,
// true). At most `max_shown` bytes of it are shown, then "..." when it is longer (for values that
// come from clients and can be long).
std::string quote_for_error(std::string_view text, std::size_t max_shown = std::string_view::npos);

// `text` with every %XX (two hex digits, either case) replaced by its byte; nullopt when a '%' is
// not followed by two hex digits. Redis URLs' user info, admin API paths, tenant journal ids.
std::optional<std::string> percent_decoded(std::string_view text);

// The length in bytes (1 to 4) of the valid UTF-8 sequence that starts at text[at], or 0 when
// the byte there starts none: a stray continuation byte, an overlong form, a surrogate, a code
// point past U+10FFFF, or a sequence cut short by the end of `text`. `at` < text.size().
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

// `text` with every byte that is not part of valid UTF-8 written as the text \xNN (lower-case
// hex), the rest as it is: what JSON output and one-line messages show of bytes from clients.
std::string utf8_or_escaped(std::string_view text);

// Appends the 22 base64url characters ('A'-'Z', 'a'-'z', '0'-'9', '-', '_'; no padding) of 16
// bytes: digested key names, reservation ids.
void append_base64url_128(std::string& out, const unsigned char* bytes16);

}  // namespace spillway
