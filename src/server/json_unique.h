// JSON text parsed with every object's members named once: a member given twice in one object is
// an error naming it. RFC 8259 §4 leaves duplicates to each implementation (Boost.JSON keeps the
// last, many front ends and WAFs the first), so a body with a duplicate can be read one way by
// whatever inspected it and another way here: such a body is refused instead. Names compare as
// decoded ("a" and "\u0061" are the same member).
//
// Cost: one pass, as boost::json::parser; the names of the open objects are kept (a copy each),
// compared one by one in small objects and sorted once when an object is large, so a body of many
// members costs O(n log n), not O(n²).
//
// Pure functions; thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

namespace spillway::server {

struct JsonParseError {
  boost::system::error_code syntax;  // what is wrong with the text; none for a duplicate
  std::size_t offset = 0;            // bytes read before the error, from 0
  std::string duplicate;             // the member given twice, as a path: "costs.tpm", "a[].b"

  // `member "costs.tpm" is given twice (a JSON object names each member once)`, or
  // "syntax error at byte 16" style text: `<syntax message> at byte <offset>`.
  std::string message() const;
};

// Parses all of `text` (whitespace around the value allowed, nothing else after it). The value's
// memory comes from `storage`; `scratch` (may be null) is the parser's temporary space.
std::expected<boost::json::value, JsonParseError> parse_json_unique(
    std::string_view text, boost::json::storage_ptr storage = {}, unsigned char* scratch = nullptr,
    std::size_t scratch_size = 0);

}  // namespace spillway::server
