#include "fuzz/check_util.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace spillway::fuzz {

void violated(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz invariant violated: %.*s", static_cast<int>(what.size()), what.data());
  if (!detail.empty()) {
    std::fprintf(stderr, ": %.*s", static_cast<int>(detail.size()), detail.data());
  }
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

namespace {

// An upper bound on the number of lines yaml-cpp can see: it also breaks lines at '\r' and, in
// UTF-8 and UTF-16 input, at NEL, LS and PS, whose encodings contain a byte >= 0x80 or 0x85.
std::size_t max_lines(std::string_view text) {
  return 1 + static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
           const auto u = static_cast<unsigned char>(c);
           return u == '\n' || u == '\r' || u >= 0x80;
         }));
}

}  // namespace

void check_line_error(std::string_view text, const std::string& message) {
  if (!message.starts_with("line ")) violated("loader error does not name a line", message);
  std::size_t line = 0;
  const char* digits = message.data() + 5;
  const char* end = message.data() + message.size();
  const auto [after, ec] = std::from_chars(digits, end, line);
  if (ec != std::errc() || after == digits || std::string_view(after, end).substr(0, 2) != ": ") {
    violated("loader error does not start with \"line N: \"", message);
  }
  if (line < 1 || line > max_lines(text)) {
    violated("loader error names a line the text does not have", message);
  }
  if (message.find_first_of("\r\n") != std::string::npos) {
    violated("loader error is more than one line", message);
  }
}

}  // namespace spillway::fuzz
