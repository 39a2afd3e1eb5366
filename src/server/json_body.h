// The JSON bodies of the decision endpoints: an object, and its fields read as whole numbers or
// strings, each error naming the field. Pure functions; thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::server {

// Reads a JSON object body; the error names what is wrong and, for a syntax error, where: the
// offset of the first byte that cannot be JSON there, from 0 ("body is not valid JSON at byte
// 16: syntax error"; the body's length when it ends too soon), or the member given twice (a
// duplicate is refused: json_unique.h). The value's memory comes from
// `resource` (a stack buffer for the usual small body), so it must not outlive it.
Result<boost::json::object> parse_object(const std::string& body,
                                         boost::json::monotonic_resource& resource);

// A whole number up to 2^52 (negative ones too: the caller bounds them), or an error naming
// `field`.
Result<std::int64_t> whole_number(const boost::json::value& v, std::string_view field);

// A string, or an error naming `field`.
Result<std::string> text(const boost::json::value& v, std::string_view field);

}  // namespace spillway::server
