// How the series of spillway's charts look (the simulate report's uPlot charts and the SVG chart),
// in one place so that every chart agrees:
//   - admitted requests are drawn in cool colours (blue, green, cyan, purple, navy), denied ones
//     in warm colours (red, orange, dark red, pink, amber): each algorithm has one of each;
//   - each algorithm has its own line dash and width, thinner and more broken the later it is
//     drawn, so a line drawn over an equal one (token_bucket and gcra decide identically for an
//     equal burst) leaves the one below visible in its gaps and at its edges;
//   - the offered traffic is a wide pale band under everything.
// Styles go by the algorithm's position in the chart (the order series are drawn in), not by its
// name. Colours are CSS hex; widths and dash lengths are CSS pixels. Constants and pure
// functions; thread safe.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "spillway/algorithm.h"

namespace spillway::pages {

struct SeriesStyle {
  std::string_view admitted;  // line colour of admitted requests
  std::string_view denied;    // line or bar colour of denied requests
  std::string_view dash;      // SVG stroke-dasharray ("12 4"); empty: a solid line
  double width;               // line width
};

inline constexpr std::array<SeriesStyle, 5> kSeriesStyles = {{
    {"#1f77b4", "#d62728", "", 3.5},
    {"#2ca02c", "#ff7f0e", "12 4", 3},
    {"#17becf", "#a50f15", "6 3", 2.5},
    {"#7b52c7", "#e7298a", "10 3 2 3", 2},
    {"#1a2a6c", "#e6ab02", "2 3", 1.5},
}};
static_assert(kSeriesStyles.size() >= kAlgorithmCount, "one style for each algorithm");

inline constexpr std::string_view kOfferedColor = "#c4c9d2";
inline constexpr double kOfferedWidth = 6;

// The style of the series at `position` (0 = drawn first); wraps past the end.
constexpr const SeriesStyle& series_style(std::size_t position) {
  return kSeriesStyles[position % kSeriesStyles.size()];
}

// `style` as a JSON object for the pages' scripts:
// {"admitted":"#…","denied":"#…","dash":[12,4],"width":3} (dash [] for a solid line).
std::string series_style_json(const SeriesStyle& style);

}  // namespace spillway::pages
