// A line chart as a standalone SVG document, for putting one chart of `spillway simulate` into a
// document (uPlot, which draws the pages' charts, draws on canvas only). Lines over a shared x,
// axes with round ticks, a legend in as many rows as the width needs. Series are drawn in order,
// each over the ones before (src/pages/series_style.h picks dashes and widths that keep equal
// lines visible). The geometry follows the text: the y axis is as wide as its widest tick label,
// and a small chart gets fewer ticks, so that no tick label meets a tick mark, another label or
// an axis title (text widths are estimated from the number of characters, above what the usual
// sans fonts draw). Elements are classed: title, grid, tick, tick-label, axis, axis-title,
// legend. Pure function; thread safe. Sizes are pixels; the data's units are the caller's.
#pragma once

#include <string>
#include <vector>

namespace spillway::pages {

struct SvgSeries {
  std::string label;
  std::string color;      // a CSS colour, e.g. "#1f77b4"
  std::vector<double> y;  // one per x; shorter series end early
  std::string dash;       // SVG stroke-dasharray in pixels, e.g. "12 4"; empty: a solid line
  double width = 1.5;     // line width, pixels
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
