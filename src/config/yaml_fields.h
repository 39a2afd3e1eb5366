// Reading the config file's YAML: the entries of a mapping, fields from a fixed set of names,
// single values and whole numbers, with errors that name the line (1-based) and the field path,
// e.g. "line 12: layers[1].limit: must be a rate such as 60/min, not a list".
//
// Errors are thrown as ConfigError by fail() and the readers below; parse_config catches them
// (nothing else may let one escape). Values quoted in errors go through quote_for_error
// (src/core/text.h). While a ReadLog is alive, collect() records an error and reading goes on
// with the next field, so that one run reports every mistake of a file; entries() and Fields
// record a repeated or unknown key and leave it out.
//
// Thread safety: the functions are reentrant. The record of empty values and the ReadLog are per
// thread: an EmptyValueKeys or ReadLog alive on a thread covers what is read on that thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/config/choice.h"

namespace spillway::policy {

// What the readers throw; parse_config turns it into an Error with the same message.
struct ConfigError {
  std::string message;
};

// yaml-cpp marks an empty value ("listen:") where the next token starts, often a later line. While
// one of these is alive on a thread, entries() records the key of each empty value it sees there,
// and errors about such a value point at its key. One per parse, on the parsing thread.
class EmptyValueKeys {
 public:
  EmptyValueKeys();
  ~EmptyValueKeys();
  EmptyValueKeys(const EmptyValueKeys&) = delete;
  EmptyValueKeys& operator=(const EmptyValueKeys&) = delete;

 private:
  std::vector<std::pair<YAML::Node, YAML::Mark>> keys_;
};

// What one parse gathers on its thread while it is alive: the errors recorded by collect() (and by
// entries() and Fields), in the order found, and the line of every field that Fields saw, by path
// ("backend.url" -> 12). One per parse, on the parsing thread; not nested.
class ReadLog {
 public:
  ReadLog();
  ~ReadLog();
  ReadLog(const ReadLog&) = delete;
  ReadLog& operator=(const ReadLog&) = delete;

  const std::vector<std::string>& errors() const { return errors_; }
  std::vector<std::pair<std::string, int>>& lines() { return lines_; }

 private:
  friend bool record_error(const ConfigError& error);
  friend class Fields;
  std::vector<std::string> errors_;
  std::vector<std::pair<std::string, int>> lines_;
};

// Records `error` in this thread's ReadLog (an empty message: reported already, dropped); false
// when there is none (the caller rethrows).
bool record_error(const ConfigError& error);

// Runs `read` (which reads one field, entry or section). Returns true when it threw no ConfigError.
// With a ReadLog alive on this thread, an error is recorded and false returned, so the caller goes
// on with the next field; without one the error propagates.
template <typename Read>
bool collect(Read&& read) {
  try {
    read();
    return true;
  } catch (const ConfigError& error) {
    if (!record_error(error)) throw;
    return false;
  }
}

// The 1-based line of a mark (line 1 when yaml-cpp has none).
int line_of(const YAML::Mark& mark);

// Throws "line N: path: what" (or "line N: what" at the top level, where `path` is empty), N being
// the line of `at` (of its key, for an empty value).
[[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& what);

// "a, b, c".
std::string join(const std::vector<std::string>& names);

// "server" + "listen" -> "server.listen"; at the top level just the name.
std::string child_path(const std::string& path, std::string_view name);

// What a node is, for errors: "a list", "a mapping", "empty" or "a single value".
const char* kind_of(const YAML::Node& node);

// The text of a single value; `expected` says what belongs there ("a rate such as 60/min").
std::string scalar(const YAML::Node& node, const std::string& path, std::string_view expected);
// The same, and not empty ("must not be empty" otherwise): file paths, prefixes.
std::string non_empty_scalar(const YAML::Node& node, const std::string& path,
                             std::string_view expected);

// How read_choice matches a field's words and lists them in its error.
struct ChoiceStyle {
  bool any_case = false;  // "X-Real-IP" reads as x-real-ip (ASCII case)
  // The error says '"x" must be one of a, b, c' (the rls section's fields) instead of '"x" must
  // be a, b or c'.
  bool one_of = false;
};

// The word of one choice field, for read_choice: the word and its gloss.
struct ChoiceWord {
  std::string_view word;
  std::string_view gloss;
};
// The index in `words` of the single value at `node` (field `path`); fails otherwise with
// '"<value>" must be a, b or c' (glosses in parentheses after their words; "one of a, b, c" with
// style.one_of), and for a value that is not a single one with "must be a, b or c, not a list".
std::size_t choice_index(const YAML::Node& node, const std::string& path,
                         std::span<const ChoiceWord> words, ChoiceStyle style);

// A switch: true, yes or on; false, no or off (the words every boolean field accepts, in the
// config and in Envoy's rules files), each all lower case, capitalised or all upper case as in
// YAML 1.2's core schema ("true", "True", "TRUE"; not "tRUE").
bool boolean(const YAML::Node& node, const std::string& path);

// A whole number from `min` to `max`.
std::int64_t whole_number(const YAML::Node& node, const std::string& path, std::int64_t min,
                          std::int64_t max);

// Fails unless `node` is a mapping; `what` describes the mapping expected there.
void expect_map(const YAML::Node& node, const std::string& path, std::string_view what);

// Where a YAML text has content and where a second document would start: the first line that
// is not blank, a comment, a directive or a document marker; and a "---" or "..." marker line
// after content (0 when there is none). Lines are 1-based. (yaml-cpp 0.7's LoadAll never returns
// on some inputs, so loaders use Load and find a second document by its separator line.)
struct TextShape {
  int first_content_line = 0;
  int second_document_line = 0;
};
TextShape text_shape(std::string_view text);

// One entry of a mapping: the key node (for its line) and the value.
struct Entry {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

// A duration in whole milliseconds ("50ms", "1s"): a finer one, such as "1500us", is an error.
std::chrono::milliseconds millis(const Entry& entry, const std::string& path);

// The entries of a mapping in file order; keys must be single values and not repeat (with a
// ReadLog, such a key is recorded as an error and left out).
std::vector<Entry> entries(const YAML::Node& map, const std::string& path);

class Fields;

// Field `name` of `fields`, one of the words of `choices`: `out` becomes its value. Nothing happens
// when the mapping lacks the field; any other word fails (choice_index). The field's name is
// given once and each word once, e.g.
//   read_choice(fields, "log_format", {{"text", false}, {"json", true}}, server.log_json);
template <typename T>
void read_choice(const Fields& fields, std::string_view name,
                 std::span<const Choice<std::type_identity_t<T>>> choices, T& out,
                 ChoiceStyle style = {});
template <typename T>
void read_choice(const Fields& fields, std::string_view name,
                 std::initializer_list<Choice<std::type_identity_t<T>>> choices, T& out,
                 ChoiceStyle style = {}) {
  read_choice(fields, name, std::span(choices.begin(), choices.size()), out, style);
}

// The fields of a mapping with a fixed set of field names; any other name is an error (with a
// ReadLog: recorded, and the field left out). Records each field's line in the ReadLog.
class Fields {
 public:
  Fields(const YAML::Node& map, std::string path, std::vector<std::string> allowed);

  // The field, or null when the mapping does not have it.
  const Entry* find(std::string_view name) const;
  // The field; fails (at the mapping) when it is missing. After an unknown field (recorded in a
  // ReadLog), a missing one is most likely that one misspelled: it fails with an already-reported
  // error (an empty message, which record_error drops).
  const Entry& require(std::string_view name) const;
  // Whether the mapping had a field not in the allowed set (recorded in a ReadLog).
  bool had_unknown() const { return had_unknown_; }
  // The field's path, for errors: "server" -> "server.listen".
  std::string path(std::string_view name) const { return child_path(path_, name); }

 private:
  YAML::Node map_;
  std::string path_;
  std::vector<Entry> fields_;
  bool had_unknown_ = false;
};

template <typename T>
void read_choice(const Fields& fields, std::string_view name,
                 std::span<const Choice<std::type_identity_t<T>>> choices, T& out,
                 ChoiceStyle style) {
  const Entry* entry = fields.find(name);
  if (entry == nullptr) return;
  std::vector<ChoiceWord> words;
  words.reserve(choices.size());
  for (const Choice<T>& choice : choices) words.push_back({choice.word, choice.gloss});
  out = choices[choice_index(entry->value, fields.path(name), words, style)].value;
}

}  // namespace spillway::policy
