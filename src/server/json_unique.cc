// parse_json_unique (see json_unique.h): Boost.JSON's own parser with a handler that builds the
// value as boost::json::parser does (a value_stack) and refuses a member name repeated in its
// object.
#include "src/server/json_unique.h"

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <vector>

#include "src/core/text.h"

namespace spillway::server {
namespace json = boost::json;
namespace {

// Up to this many members an object's names are compared as they come; past it, sorted once
// when the object closes.
constexpr std::size_t kCompareOneByOne = 32;
constexpr std::size_t kNoKey = static_cast<std::size_t>(-1);

class UniqueMembers {
 public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  UniqueMembers(unsigned char* scratch, std::size_t size)
      : stack(json::storage_ptr(), scratch, size) {}

  json::value_stack stack;
  std::string duplicate;  // set when a member was given twice

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    open(true);
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code& ec) {
    if (n > kCompareOneByOne && !sorted_unique(ec)) return false;
    names_.resize(levels_.back().first_name);
    levels_.pop_back();
    stack.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) {
    open(false);
    return true;
  }
  bool on_array_end(std::size_t n, json::error_code&) {
    levels_.pop_back();
    stack.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    stack.push_chars(s);
    partial_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    stack.push_key(s);
    std::string name = std::move(partial_);
    partial_.clear();
    name.append(s.data(), s.size());
    const std::size_t first = levels_.back().first_name;
    if (names_.size() - first < kCompareOneByOne &&
        std::find(names_.begin() + static_cast<std::ptrdiff_t>(first), names_.end(), name) !=
            names_.end()) {
      return refuse(name, ec);
    }
    names_.push_back(std::move(name));
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    stack.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    stack.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    stack.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    stack.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view, json::error_code&) {
    stack.push_double(d);
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    stack.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    stack.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  struct Level {
    std::size_t first_name;  // this object's first name in names_
    std::size_t under;       // the parent object's name it is the value of; kNoKey in an array
    bool object;             // an object (else an array)
    bool root;
  };

  // An object or array begins: in an object, it is the value of that object's last name.
  void open(bool object) {
    const bool root = levels_.empty();
    const std::size_t under = !root && levels_.back().object ? names_.size() - 1 : kNoKey;
    levels_.push_back({names_.size(), under, object, root});
  }

  // The names of the innermost object, sorted once: false (and `duplicate` set) on a repeat.
  bool sorted_unique(json::error_code& ec) {
    std::vector<std::string_view> sorted(
        names_.begin() + static_cast<std::ptrdiff_t>(levels_.back().first_name), names_.end());
    std::sort(sorted.begin(), sorted.end());
    const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
    if (repeated == sorted.end()) return true;
    return refuse(std::string(*repeated), ec);
  }

  bool refuse(const std::string& name, json::error_code& ec) {
    for (const Level& level : levels_) {
      if (level.root) continue;
      if (level.under != kNoKey) {
        if (!duplicate.empty()) duplicate += '.';
        duplicate += names_[level.under];
      } else {
        duplicate += "[]";
      }
    }
    if (!duplicate.empty()) duplicate += '.';
    duplicate += name;
    ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    return false;
  }

  // The names of every open object, outermost first, and the open objects and arrays: in place
  // for the usual small body (no allocation but a long name's), on the heap past that.
  boost::container::small_vector<std::string, 16> names_;
  boost::container::small_vector<Level, 8> levels_;
  std::string partial_;  // a name that came in parts
};

}  // namespace

std::string JsonParseError::message() const {
  if (!duplicate.empty()) {
    return "member " + quote_for_error(duplicate, 80) +
           " is given twice (a JSON object names each member once)";
  }
  return syntax.message() + " at byte " + std::to_string(offset);
}

std::expected<json::value, JsonParseError> parse_json_unique(std::string_view text,
                                                             json::storage_ptr storage,
                                                             unsigned char* scratch,
                                                             std::size_t scratch_size) {
  json::basic_parser<UniqueMembers> parser(json::parse_options(), scratch, scratch_size);
  parser.handler().stack.reset(std::move(storage));
  json::error_code ec;
  const std::size_t parsed = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && parsed < text.size()) ec = json::error::extra_data;
  if (ec) {
    return std::unexpected(
        JsonParseError{.syntax = parser.handler().duplicate.empty() ? ec : json::error_code(),
                       .offset = parsed,
                       .duplicate = std::move(parser.handler().duplicate)});
  }
  return parser.handler().stack.release();
}

}  // namespace spillway::server
