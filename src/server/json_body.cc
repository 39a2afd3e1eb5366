#include "src/server/json_body.h"

#include "spillway/limit.h"
#include "src/server/json_unique.h"

namespace spillway::server {
namespace json = boost::json;

Result<json::object> parse_object(const std::string& body, json::monotonic_resource& resource) {
  unsigned char scratch[512];  // the parser's own stack, for the usual nesting
  auto parsed = parse_json_unique(body, json::storage_ptr(&resource), scratch, sizeof scratch);
  if (!parsed) {
    const JsonParseError& error = parsed.error();
    if (!error.duplicate.empty()) return invalid_argument("body: " + error.message());
    return invalid_argument("body is not valid JSON at byte " + std::to_string(error.offset) +
                            ": " + error.syntax.message());
  }
  if (!parsed->is_object()) return invalid_argument("body must be a JSON object");
  return std::move(parsed->as_object());
}

Result<std::int64_t> whole_number(const json::value& v, std::string_view field) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(kMaxExact)) {
    return static_cast<std::int64_t>(v.as_uint64());
  }
  return invalid_argument("\"" + std::string(field) + "\" must be a whole number");
}

Result<std::string> text(const json::value& v, std::string_view field) {
  if (!v.is_string()) return invalid_argument("\"" + std::string(field) + "\" must be a string");
  return std::string(v.as_string());
}

}  // namespace spillway::server
