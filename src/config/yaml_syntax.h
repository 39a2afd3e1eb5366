// YAML syntax errors in words: yaml-cpp's parser messages ("illegal map value", "end of map flow
// not found") become what a person fixes ("a tab character cannot indent YAML (use spaces)",
// "unclosed '{' …"), and an unclosed quote at the end of the text, which yaml-cpp 0.7 accepts, is
// found. Lines are 1-based. Pure functions of their arguments; thread-safe. No yaml-cpp here, so
// the rules' loader can share it as well as the config's.
#pragma once

#include <string>
#include <string_view>

namespace spillway::policy {

// "line N: what" for yaml-cpp's `parser_message` at `line` (0 when the parser gave none) in
// `text`, the whole document. A message it has no words for is kept, after a "YAML syntax:".
std::string describe_yaml_error(std::string_view text, std::string_view parser_message, int line);

// "line N: unclosed … quote …" for a quoted value still open at the end of `text`; "" when every
// quote is closed.
std::string unclosed_quote(std::string_view text);

}  // namespace spillway::policy
