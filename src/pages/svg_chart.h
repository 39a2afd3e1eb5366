// A line chart as a standalone SVG document, for putting one chart of `spillway simulate` into a
// document (uPlot, which draws the pages' charts, draws on canvas only). Lines over a shared x,
// axes with a few round ticks, a legend. Pure function; thread safe. Units are the caller's.
#pragma once

#include <string>
#include <vector>

namespace spillway::pages {

struct SvgSeries {
  std::string label;
  std::string color;      // a CSS colour, e.g. "#1f77b4"
  std::vector<double> y;  // one per x; shorter series end early
  bool dashed = false;
};

struct SvgChart {
  std::string title;
  std::string x_label, y_label;
  std::vector<double> x;  // ascending
  std::vector<SvgSeries> series;
  int width = 900, height = 360;  // pixels
};

std::string line_chart_svg(const SvgChart& chart);

}  // namespace spillway::pages
