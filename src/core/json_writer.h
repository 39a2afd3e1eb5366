// JSON text, written in one place: the one escaper of string literals (append_json_string) and
// JsonWriter, which puts the punctuation (braces, brackets, commas, colons) between members and
// values. Every JSON that spillway writes by hand goes through it: the HTTP bodies of the server
// and the admin API, the access log's and serve's JSON lines, the gRPC listener's log line, the
// CLI's --json output and the report page's data.
//
// Strings: '"' and '\' are escaped with a backslash, control characters (below 0x20) are written
// as \u00XX (lower-case hex, also \n and \t), every other byte as it is. The caller passes UTF-8:
// utf8_or_escaped (src/core/text.h) makes any bytes so.
// Numbers: integers in decimal; fixed(value, decimals) as printf's "%.*f"; plain(value) in the
// shortest plain decimals that read back the same ("12.2", "0.0005", never an exponent). A double
// that is not finite is written as null.
//
// Thread safety: append_json_string is a pure function; a JsonWriter is used by one thread at a
// time. Ownership: a JsonWriter appends to a string it does not own, which must outlive it. It
// allocates nothing of its own (only the string grows), so it may be used on the request path.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/core/decimal.h"

namespace spillway {

// Appends `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

// A member's name as the source spells it ("allowed"): a string literal, checked when compiled
// to need no escaping (no '"', '\\' or control character: the build fails otherwise), so that it
// is written as it is. Names made at run time go through JsonWriter::runtime_key.
class JsonKey {
 public:
  template <std::size_t N>
  consteval JsonKey(const char (&name)[N]) : name_(name, N - 1) {  // NOLINT: implicit on purpose
    for (const char c : name_) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == '"' || byte == '\\')
        throw "a JSON key in the source needs no escaping";
    }
  }
  constexpr std::string_view name() const { return name_; }

 private:
  std::string_view name_;
};

// Writes one JSON value (usually an object) at the end of a string. The writer checks nothing:
// a member's value must follow its key, and begin/end calls must pair up, at most kMaxDepth
// levels deep.
class JsonWriter {
 public:
  static constexpr int kMaxDepth = 64;

  explicit JsonWriter(std::string& out) : out_(out) {}

  // A writer inside an object that is already open in `out` (its '{' written, or a list of
  // members that someone else puts between braces, as log fields are): members go on from there,
  // the first with a comma when `has_members`. end_object() closes it.
  static JsonWriter in_object(std::string& out, bool has_members) {
    JsonWriter writer(out);
    writer.depth_ = 1;
    writer.has_items_ = has_members ? 1 : 0;
    return writer;
  }

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  // A member's name and its colon, after a comma when the object holds a member already; its
  // value comes next. Written into the string in one step: this runs for every member on the
  // request path.
  JsonWriter& key(JsonKey name) {
    const bool comma = level_has_items();
    before_key();
    const std::string_view text = name.name();
    const std::size_t at = out_.size();
    const std::size_t size = at + comma + text.size() + 3;
    // The operation returns `size`, not its second argument: libstdc++ 12 passes the capacity
    // it allocated there.
    out_.resize_and_overwrite(size, [&](char* data, std::size_t) {
      char* p = data + at;
      if (comma) *p++ = ',';
      *p++ = '"';
      copy_short(p, text);
      p += text.size();
      p[0] = '"';
      p[1] = ':';
      return size;
    });
    return *this;
  }
  // The same for a name made at run time (a layer's, a list's), escaped.
  JsonWriter& runtime_key(std::string_view name) {
    if (level_has_items()) out_.push_back(',');
    before_key();
    append_json_string(out_, name);
    out_.push_back(':');
    return *this;
  }

  JsonWriter& value(std::string_view text) {
    before_value();
    append_json_string(out_, text);
    return *this;
  }
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag) {
    before_value();
    append_short(flag ? std::string_view("true") : std::string_view("false"));
    return *this;
  }
  template <std::integral Number>
  requires(!std::same_as<Number, bool>) JsonWriter& value(Number number) {
    before_value();
    append_decimal(out_, number);
    return *this;
  }
  // No implicit conversion to bool: doubles go through fixed() or plain(), pointers are not values.
  template <std::floating_point Number>
  JsonWriter& value(Number) = delete;
  template <typename T>
  JsonWriter& value(const T*) = delete;
  JsonWriter& null() {
    before_value();
    append_short("null");
    return *this;
  }
  // `number` with `decimals` digits after the point ("%.*f"); null when not finite.
  JsonWriter& fixed(double number, int decimals);
  // `number` in the shortest plain decimals that read back the same; null when not finite.
  JsonWriter& plain(double number);
  // A value that is JSON text already (an object another function wrote, a number formatted
  // elsewhere), written as it is.
  JsonWriter& raw(std::string_view json) {
    before_value();
    out_.append(json);
    return *this;
  }

  // key(name) then value(v).
  template <typename Value>
  JsonWriter& member(JsonKey name, const Value& v) {
    key(name);
    return value(v);
  }
  // key(name) then null().
  JsonWriter& null_member(JsonKey name) {
    key(name);
    return null();
  }
  // Members that are JSON text already (`"a":1,"b":true`, as decision_log_fields writes them),
  // spliced into the open object with a comma before them when needed; empty: nothing.
  JsonWriter& members(std::string_view json_members);

 private:
  JsonWriter& open(char bracket) {
    before_value();
    out_.push_back(bracket);
    ++depth_;
    has_items_ &= ~(std::uint64_t{1} << (depth_ - 1));
    return *this;
  }
  JsonWriter& close(char bracket) {
    out_.push_back(bracket);
    --depth_;
    return *this;
  }
  // out_ += text, for short texts (see copy_short).
  void append_short(std::string_view text) {
    const std::size_t at = out_.size();
    out_.resize_and_overwrite(at + text.size(), [at, text](char* data, std::size_t) {
      copy_short(data + at, text);
      return at + text.size();  // not the second argument (see key)
    });
  }
  // Copies `text` to `to` without a call to memcpy for the short names members have: two
  // fixed-size (overlapping) copies, which compile to moves.
  static void copy_short(char* to, std::string_view text) {
    const char* from = text.data();
    const std::size_t n = text.size();
    if (n >= 8 && n <= 16) {
      std::memcpy(to, from, 8);
      std::memcpy(to + n - 8, from + n - 8, 8);
    } else if (n >= 4 && n < 8) {
      std::memcpy(to, from, 4);
      std::memcpy(to + n - 4, from + n - 4, 4);
    } else {
      std::memcpy(to, from, n);
    }
  }
  // The comma before a value in an array or at the top; none right after a key.
  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (level_has_items()) out_.push_back(',');
    mark_level();
  }
  // A member's name is being written: its level holds a member now, and its value follows
  // without a comma. (The comma before the name is key's and runtime_key's to write.)
  void before_key() {
    mark_level();
    after_key_ = true;
  }
  bool level_has_items() const { return depth_ > 0 && ((has_items_ >> (depth_ - 1)) & 1) != 0; }
  void mark_level() {
    if (depth_ > 0) has_items_ |= std::uint64_t{1} << (depth_ - 1);
  }

  std::string& out_;
  int depth_ = 0;                // open objects and arrays
  std::uint64_t has_items_ = 0;  // bit d-1: the level at depth d holds a member or value already
  bool after_key_ = false;       // a key was written; its value comes next
};

}  // namespace spillway
