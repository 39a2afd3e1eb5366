#include "src/pages/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/pages/html.h"

namespace spillway::pages {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// A tick step of 1, 2 or 5 × 10^k that cuts [0, span] into about `parts` pieces.
double tick_step(double span, int parts) {
  if (span <= 0) return 1;
  const double raw = span / parts;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * magnitude) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", std::round(value * 1000) / 1000);
  return text;
}

}  // namespace

std::string line_chart_svg(const SvgChart& chart) {
  const double left = 64, right = 16, top = 36, bottom = 56;
  const double plot_w = chart.width - left - right, plot_h = chart.height - top - bottom;
  const double x0 = chart.x.empty() ? 0 : chart.x.front();
  const double x1 = chart.x.empty() ? 1 : std::max(chart.x.back(), x0 + 1e-9);
  double y1 = 0;
  for (const SvgSeries& s : chart.series) {
    for (double y : s.y) y1 = std::max(y1, y);
  }
  const double y_step = tick_step(y1 > 0 ? y1 : 1, 5);
  y1 = std::ceil((y1 > 0 ? y1 : 1) / y_step) * y_step;
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  const auto py = [&](double y) { return top + plot_h - y / y1 * plot_h; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(chart.width) + "\" height=\"" + std::to_string(chart.height) +
                    "\" viewBox=\"0 0 " + std::to_string(chart.width) + " " +
                    std::to_string(chart.height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  svg += "<text x=\"" + number(left) + "\" y=\"22\" font-size=\"15\" font-weight=\"600\">" +
         xml_text(chart.title) + "</text>\n";
  // Grid and y ticks.
  for (double y = 0; y <= y1 + y_step / 2; y += y_step) {
    svg += "<line x1=\"" + number(left) + "\" x2=\"" + number(left + plot_w) + "\" y1=\"" +
           number(py(y)) + "\" y2=\"" + number(py(y)) + "\" stroke=\"#e3e6ec\"/>\n";
    svg += "<text x=\"" + number(left - 6) + "\" y=\"" + number(py(y) + 4) +
           "\" text-anchor=\"end\">" + tick_label(y) + "</text>\n";
  }
  const double x_step = tick_step(x1 - x0, 8);
  for (double x = std::ceil(x0 / x_step) * x_step; x <= x1 + 1e-9; x += x_step) {
    svg += "<text x=\"" + number(px(x)) + "\" y=\"" + number(top + plot_h + 16) +
           "\" text-anchor=\"middle\">" + tick_label(x) + "</text>\n";
  }
  svg += "<line x1=\"" + number(left) + "\" x2=\"" + number(left + plot_w) + "\" y1=\"" +
         number(top + plot_h) + "\" y2=\"" + number(top + plot_h) + "\" stroke=\"#444\"/>\n";
  svg += "<text x=\"" + number(left + plot_w / 2) + "\" y=\"" + number(top + plot_h + 34) +
         "\" text-anchor=\"middle\">" + xml_text(chart.x_label) + "</text>\n";
  svg += "<text transform=\"translate(14 " + number(top + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + xml_text(chart.y_label) + "</text>\n";
  // The series, then the legend under the x label.
  double legend_x = left;
  for (const SvgSeries& s : chart.series) {
    std::string points;
    const std::size_t n = std::min(s.y.size(), chart.x.size());
    for (std::size_t i = 0; i < n; ++i) {
      points += number(px(chart.x[i])) + "," + number(py(std::max(0.0, s.y[i]))) + " ";
    }
    // The same stroke for the line and its sample in the legend.
    const std::string stroke =
        "stroke=\"" + xml_text(s.color) + "\" stroke-width=\"" + number(s.width) + "\"" +
        (s.dash.empty() ? "" : " stroke-dasharray=\"" + xml_text(s.dash) + "\"");
    svg += "<polyline fill=\"none\" " + stroke + " stroke-linejoin=\"round\" points=\"" + points +
           "\"/>\n";
    const double legend_y = chart.height - 8;
    svg += "<line x1=\"" + number(legend_x) + "\" x2=\"" + number(legend_x + 24) + "\" y1=\"" +
           number(legend_y - 4) + "\" y2=\"" + number(legend_y - 4) + "\" " + stroke + "/>\n";
    svg += "<text x=\"" + number(legend_x + 28) + "\" y=\"" + number(legend_y) + "\">" +
           xml_text(s.label) + "</text>\n";
    legend_x += 36 + 7.0 * static_cast<double>(s.label.size());
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace spillway::pages
