// "Did you mean ...?" for a mistyped command or option: the candidate nearest to what was typed by
// edit distance (one insertion, deletion, substitution or swap of two adjacent characters each
// counts 1: "lsit" is one edit from "list"), when it is close enough to be a likely typo. Pure
// functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace spillway::cli {

// The number of single-character edits that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed`, if its distance is at most max(2, typed.size() / 3); the first
// such candidate in the range's order wins a tie. nullopt when none is that near.
template <typename Range>
std::optional<std::string> nearest_name(std::string_view typed, const Range& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  const std::size_t limit = typed.size() / 3 > 2 ? typed.size() / 3 : 2;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(typed, candidate);
    if (d > limit || (best && d >= best_distance)) continue;
    best = std::string(candidate);
    best_distance = d;
  }
  return best;
}

// "; did you mean <prefix><nearest>?" or "" when nothing is near.
template <typename Range>
std::string did_you_mean(std::string_view typed, const Range& candidates,
                         std::string_view prefix = "") {
  std::optional<std::string> near = nearest_name(typed, candidates);
  if (!near) return "";
  return "; did you mean " + std::string(prefix) + *near + "?";
}

}  // namespace spillway::cli
