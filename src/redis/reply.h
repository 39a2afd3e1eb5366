// A decoded Redis reply (RESP2), owned by value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spillway::redis {

struct Reply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  std::int64_t integer = 0;
  std::string text;             // kString, kStatus, kError (the message, e.g. "NOSCRIPT No ...")
  std::vector<Reply> elements;  // kArray

  bool is_error() const { return type == Type::kError; }
};

}  // namespace spillway::redis
