#include "src/cli/nearest.h"

#include <algorithm>
#include <vector>

namespace spillway::cli {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // The dynamic-programming table, three rows at a time: cur[j] is the distance between the
  // first i characters of a and the first j of b; two rows back is for a transposition.
  std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);  // "ls" for "sl": one edit
      }
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

}  // namespace spillway::cli
