// The words of a config field that takes one of a fixed set: each word and the value it stands
// for, in one table. yaml_fields.h's read_choice reads a field by such a table, and the table is
// the field's one spelling of its words (on_error.h keeps backend.on_error's here, for /readyz and
// the logs too). Plain data; thread-safe.
#pragma once

#include <string_view>

namespace spillway::policy {

template <typename T>
struct Choice {
  std::string_view word;  // as written in the file: "allow"
  T value;                // what it stands for
  std::string_view gloss =
      {};  // when given, shown after the word in errors: "file (the keys below)"
};

}  // namespace spillway::policy
