#include "src/server/json_body.h"

#include "spillway/limit.h"

namespace spillway::server {
namespace json = boost::json;

Result<json::object> parse_object(const std::string& body, json::monotonic_resource& resource) {
  unsigned char scratch[512];  // the parser's own stack, for the usual nesting
  json::parser parser(json::storage_ptr(), json::parse_options(), scratch, sizeof scratch);
  parser.reset(json::storage_ptr(&resource));
  boost::system::error_code ec;
  const std::size_t parsed = parser.write(body.data(), body.size(), ec);
  if (ec) {
    return invalid_argument("body is not valid JSON at byte " + std::to_string(parsed) + ": " +
                            ec.message());
  }
  json::value value = parser.release();
  if (!value.is_object()) return invalid_argument("body must be a JSON object");
  return std::move(value.as_object());
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
