// The YAML field readers of the config file (see yaml_fields.h).
#include "src/config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "spillway/duration.h"
#include "src/core/text.h"

namespace spillway::policy {
namespace {

// The keys of empty values seen by entries() on this thread, while an EmptyValueKeys is alive.
thread_local std::vector<std::pair<YAML::Node, YAML::Mark>>* t_empty_values = nullptr;

// The ReadLog alive on this thread, if any.
thread_local ReadLog* t_read_log = nullptr;

YAML::Mark mark_of(const YAML::Node& node) {
  if (node.IsNull() && t_empty_values != nullptr) {
    for (const auto& [value, key_mark] : *t_empty_values) {
      if (value.is(node)) return key_mark;
    }
  }
  return node.Mark();
}

}  // namespace

EmptyValueKeys::EmptyValueKeys() { t_empty_values = &keys_; }

EmptyValueKeys::~EmptyValueKeys() { t_empty_values = nullptr; }

ReadLog::ReadLog() { t_read_log = this; }

ReadLog::~ReadLog() { t_read_log = nullptr; }

bool record_error(const ConfigError& error) {
  if (t_read_log == nullptr) return false;
  if (!error.message.empty()) t_read_log->errors_.push_back(error.message);
  return true;
}

int line_of(const YAML::Mark& mark) { return mark.line < 0 ? 1 : mark.line + 1; }

void fail(const YAML::Node& at, const std::string& path, const std::string& what) {
  std::string message = "line " + std::to_string(line_of(mark_of(at))) + ": ";
  if (!path.empty()) message += path + ": ";
  throw ConfigError{message + what};
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string child_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

const char* kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
      return "empty";
    default:
      return "a single value";
  }
}

std::string scalar(const YAML::Node& node, const std::string& path, std::string_view expected) {
  if (!node.IsScalar()) {
    fail(node, path, "must be " + std::string(expected) + ", not " + kind_of(node));
  }
  return node.Scalar();
}

std::string non_empty_scalar(const YAML::Node& node, const std::string& path,
                             std::string_view expected) {
  std::string text = scalar(node, path, expected);
  if (text.empty()) fail(node, path, "must not be empty");
  return text;
}

std::int64_t whole_number(const YAML::Node& node, const std::string& path, std::int64_t min,
                          std::int64_t max) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " +
                            (max == std::numeric_limits<std::int64_t>::max() ? std::string("2^63-1")
                                                                             : std::to_string(max));
  const std::string text = scalar(node, path, range);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < min ||
      value > max) {
    fail(node, path, quote_for_error(text) + " must be " + range);
  }
  return value;
}

namespace {

// "a, b or c" (`one_of`: "a, b, c"), each word followed by " (gloss)" when `glossed`.
std::string word_list(std::span<const ChoiceWord> words, bool one_of, bool glossed) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += one_of || i + 1 < words.size() ? ", " : " or ";
    out += words[i].word;
    if (glossed && !words[i].gloss.empty()) out += " (" + std::string(words[i].gloss) + ")";
  }
  return out;
}

}  // namespace

std::size_t choice_index(const YAML::Node& node, const std::string& path,
                         std::span<const ChoiceWord> words, ChoiceStyle style) {
  const std::string text = scalar(node, path, word_list(words, style.one_of, false));
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (style.any_case ? ascii_iequals(text, words[i].word) : text == words[i].word) return i;
  }
  fail(node, path,
       quote_for_error(text) + " must be " + (style.one_of ? "one of " : "") +
           word_list(words, style.one_of, true));
}

namespace {

// Whether `text` is `word` (lower-case letters) as YAML 1.2's core schema spells its words: all
// lower case, capitalised or all upper case ("true", "True", "TRUE"; not "tRUE").
bool spells(std::string_view text, std::string_view word) {
  if (text.empty() || text.size() != word.size()) return false;
  const auto upper = [](char c) { return static_cast<char>(c - 'a' + 'A'); };
  const bool first_ok = text[0] == word[0] || text[0] == upper(word[0]);
  bool rest_lower = true, rest_upper = true;
  for (std::size_t i = 1; i < word.size(); ++i) {
    rest_lower &= text[i] == word[i];
    rest_upper &= text[i] == upper(word[i]);
  }
  return first_ok && (rest_lower || (rest_upper && text[0] == upper(word[0])));
}

}  // namespace

bool boolean(const YAML::Node& node, const std::string& path) {
  const std::string text = scalar(node, path, "true or false (or yes/no, on/off)");
  for (std::string_view word : {"true", "yes", "on"}) {
    if (spells(text, word)) return true;
  }
  for (std::string_view word : {"false", "no", "off"}) {
    if (spells(text, word)) return false;
  }
  fail(node, path, quote_for_error(text) + " must be true or false (or yes/no, on/off)");
}

void expect_map(const YAML::Node& node, const std::string& path, std::string_view what) {
  if (!node.IsMap()) fail(node, path, "must be " + std::string(what) + ", not " + kind_of(node));
}

std::vector<Entry> entries(const YAML::Node& map, const std::string& path) {
  std::vector<Entry> out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const bool usable = collect([&] {
      if (!key.IsScalar()) {
        fail(key, path, "a key must be a single value, not " + std::string(kind_of(key)));
      }
      if (std::any_of(out.begin(), out.end(),
                      [&](const Entry& e) { return e.name == key.Scalar(); })) {
        fail(key, child_path(path, key.Scalar()), "given twice");
      }
    });
    if (!usable) continue;
    const std::string name = key.Scalar();
    if (it->second.IsNull() && t_empty_values != nullptr) {
      t_empty_values->emplace_back(it->second, key.Mark());
    }
    out.push_back(Entry{name, key, it->second});
  }
  return out;
}

Fields::Fields(const YAML::Node& map, std::string path, std::vector<std::string> allowed)
    : map_(map), path_(std::move(path)) {
  for (Entry& entry : entries(map, path_)) {
    const bool known = collect([&] {
      if (std::find(allowed.begin(), allowed.end(), entry.name) == allowed.end()) {
        fail(entry.key, child_path(path_, entry.name),
             "unknown field (expected " + join(allowed) + ")");
      }
    });
    if (!known) {
      had_unknown_ = true;
      continue;
    }
    if (t_read_log != nullptr) {
      t_read_log->lines_.emplace_back(child_path(path_, entry.name), line_of(entry.key.Mark()));
    }
    fields_.push_back(std::move(entry));
  }
}

const Entry* Fields::find(std::string_view name) const {
  for (const Entry& entry : fields_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

const Entry& Fields::require(std::string_view name) const {
  const Entry* entry = find(name);
  if (entry == nullptr && had_unknown_) throw ConfigError{};
  if (entry == nullptr) fail(map_, path_, "missing field " + std::string(name));
  return *entry;
}

TextShape text_shape(std::string_view text) {
  TextShape shape;
  int number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool marker = (line.starts_with("---") || line.starts_with("...")) &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    if (marker) {
      if (shape.first_content_line > 0) {
        shape.second_document_line = number;
        return shape;
      }
      continue;
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#' || line[first] == '%') continue;
    if (shape.first_content_line == 0) shape.first_content_line = number;
  }
  return shape;
}

// A duration in whole milliseconds.
std::chrono::milliseconds millis(const Entry& entry, const std::string& path) {
  const std::string text = scalar(entry.value, path, "a duration such as 50ms");
  Result<Micros> micros = parse_duration(text);
  if (!micros) fail(entry.value, path, micros.error().message);
  if (*micros % kMicrosPerMilli != 0) {
    fail(entry.value, path, "duration " + quote_for_error(text) + " must be whole milliseconds");
  }
  return std::chrono::milliseconds(*micros / kMicrosPerMilli);
}

}  // namespace spillway::policy
