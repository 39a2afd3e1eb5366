#include "fuzz/check_util.h"

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

}  // namespace spillway::fuzz
