#include "spillway/algorithm.h"

#include <vector>

namespace spillway {
namespace {

// "a, b, c or d" over the algorithms for which `keep` holds.
template <typename Keep>
std::string list_names(Keep keep, std::string_view last_separator) {
  std::vector<std::string_view> names;
  for (Algorithm a : kAlgorithms) {
    if (keep(a)) names.push_back(algorithm_name(a));
  }
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? last_separator : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace

Result<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm a : kAlgorithms) {
    if (algorithm_name(a) == name) return a;
  }
  return invalid_argument("algorithm \"" + std::string(name) + "\" is unknown (use " +
                          list_names([](Algorithm) { return true; }, " or ") + ")");
}

std::string burst_not_taken_message(Algorithm a) {
  return "burst applies only to " + list_names(takes_burst, " and ") + ", not " +
         std::string(algorithm_name(a));
}

std::string max_delay_not_taken_message(Algorithm a) {
  return "max_delay applies only to " + list_names(takes_max_delay, " and ") + ", not " +
         std::string(algorithm_name(a)) +
         " (a window cannot say when a request would fit; use gcra to smooth bursts)";
}

}  // namespace spillway
