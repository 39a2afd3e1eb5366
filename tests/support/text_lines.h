// The non-empty lines of a text (a process's output, a log), for tests that look for lines.
// Pure; thread-safe.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace spillway::testing {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace spillway::testing
