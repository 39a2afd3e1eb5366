// YAML syntax errors in words (see yaml_syntax.h).
#include "src/config/yaml_syntax.h"

#include <vector>

namespace spillway::policy {
namespace {

// What a scan of the text found still open at its end: a quote and the brackets of flow
// collections, each with the line it opened on (0: nothing open).
struct Open {
  char quote = 0;
  int quote_line = 0;
  std::vector<std::pair<char, int>> brackets;
};

std::size_t indentation(std::string_view line) {
  const std::size_t first = line.find_first_not_of(' ');
  return first == std::string_view::npos ? line.size() : first;
}

// Whether a line (outside quotes) ends with a block scalar's indicator: "key: |", "- >-".
bool starts_block_scalar(std::string_view line) {
  if (const std::size_t comment = line.find(" #"); comment != std::string_view::npos) {
    line = line.substr(0, comment);
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  while (!line.empty() &&
         (line.back() == '+' || line.back() == '-' || (line.back() >= '0' && line.back() <= '9'))) {
    line.remove_suffix(1);
  }
  if (line.empty() || (line.back() != '|' && line.back() != '>')) return false;
  line.remove_suffix(1);
  while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
  return line.empty() || line.back() == ':' || line.back() == '-';
}

Open scan(std::string_view text) {
  Open open;
  int number = 0;
  std::size_t block_indent = std::string_view::npos;  // inside a block scalar deeper than this
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (open.quote == 0 && block_indent != std::string_view::npos) {
      const bool blank = line.find_first_not_of(" \r") == std::string_view::npos;
      if (blank || indentation(line) > block_indent) continue;
      block_indent = std::string_view::npos;
    }
    bool at_value_start = open.quote == 0;  // where a quote or a bracket may open a value
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (open.quote == '\'') {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;  // '' is a quote inside single quotes
        } else if (c == '\'') {
          open.quote = 0;
        }
        continue;
      }
      if (open.quote == '"') {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          open.quote = 0;
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') continue;
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) break;
      const bool next_is_space = i + 1 >= line.size() || line[i + 1] == ' ';
      if ((c == '\'' || c == '"') && at_value_start) {
        open.quote = c;
        open.quote_line = number;
      } else if ((c == '[' || c == '{') && (at_value_start || !open.brackets.empty())) {
        open.brackets.emplace_back(c, number);
        at_value_start = true;
        continue;
      } else if ((c == ']' || c == '}') && !open.brackets.empty()) {
        open.brackets.pop_back();
      } else if (c == ',' && !open.brackets.empty()) {
        at_value_start = true;
        continue;
      } else if ((c == ':' || c == '-' || c == '?') && next_is_space) {
        at_value_start = true;
        continue;
      }
      at_value_start = false;
    }
    if (open.quote == 0 && open.brackets.empty() && starts_block_scalar(line)) {
      block_indent = indentation(line);
    }
  }
  return open;
}

// The text of 1-based line `number` ("" past the end).
std::string_view line_at(std::string_view text, int number) {
  for (int i = 1; i < number; ++i) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) return {};
    text.remove_prefix(end + 1);
  }
  return text.substr(0, text.find('\n'));
}

// The first line up to `last` (all lines when 0) whose indentation holds a tab; 0 when none.
int tab_indented_line(std::string_view text, int last) {
  int number = 0;
  while (!text.empty() && (last == 0 || number < last)) {
    ++number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(0, first).find('\t') != std::string::npos &&
        line[first] != '#') {
      return number;
    }
  }
  return 0;
}

std::string at(int line, std::string_view what) {
  return "line " + std::to_string(line < 1 ? 1 : line) + ": " + std::string(what);
}

}  // namespace

std::string describe_yaml_error(std::string_view text, std::string_view parser_message, int line) {
  // A tab in the indentation of the error's line (or of one above it) is the usual cause of
  // "illegal map value" and friends.
  const std::string_view error_line = line_at(text, line);
  const std::size_t first = error_line.find_first_not_of(" \t");
  int tab = 0;
  if (first != std::string_view::npos &&
      error_line.substr(0, first).find('\t') != std::string::npos) {
    tab = line;
  } else {
    tab = tab_indented_line(text, line);
  }
  if (tab > 0) return at(tab, "a tab character cannot indent YAML (use spaces)");

  const Open open = scan(text);
  if (parser_message == "end of map flow not found" ||
      parser_message == "end of sequence flow not found") {
    const char bracket = parser_message.starts_with("end of map") ? '{' : '[';
    int opened = line;
    for (const auto& [c, number] : open.brackets) {
      if (c == bracket) opened = number;
    }
    return at(opened, std::string("unclosed '") + bracket + "' (no '" +
                          (bracket == '{' ? '}' : ']') + "' closes it)");
  }
  struct Words {
    std::string_view parser, words;
  };
  static constexpr Words kWords[] = {
      {"illegal map value",
       "unexpected ':' (quote a value that holds ': ', and start a nested mapping on its own "
       "line)"},
      {"end of map not found",
       "this line does not fit the mapping above it: check its indentation, and quote a value "
       "that starts with '[' or '{' but goes on after the closing bracket"},
      {"end of sequence not found",
       "this line does not fit the list above it: check its indentation"},
      {"illegal flow end", "a ']' or '}' that closes nothing"},
      {"unknown token",
       "a character that cannot start a value here ('@' and '`' are reserved: quote "
       "the value)"},
      {"illegal block entry",
       "a list item ('- ') where a list cannot start: check the indentation"},
      {"illegal map key", "a mapping key where one cannot start: check the indentation"},
      {"the referenced anchor is not defined", "an alias (*name) with no anchor (&name) before it"},
      {"illegal tab when looking for indentation",
       "a tab character cannot indent YAML (use spaces)"},
  };
  for (const Words& w : kWords) {
    if (parser_message == w.parser) return at(line, w.words);
  }
  if (parser_message.starts_with("unknown escape character: ")) {
    return at(line, "unknown escape '\\" + std::string(parser_message.substr(26)) +
                        "' in a double-quoted value (use single quotes, or '\\\\' for a "
                        "backslash)");
  }
  return at(line, "YAML syntax: " + std::string(parser_message));
}

std::string unclosed_quote(std::string_view text) {
  const Open open = scan(text);
  if (open.quote == 0) return "";
  return at(open.quote_line, std::string("unclosed ") + (open.quote == '"' ? "double" : "single") +
                                 " quote (no " + open.quote + " closes it)");
}

}  // namespace spillway::policy
