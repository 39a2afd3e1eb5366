#include "src/pages/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/pages/html.h"

namespace spillway::pages {
namespace {

// The geometry of the text, in pixels. Text widths are estimated (an SVG is laid out by whoever
// opens it): kCharWidth is above the advance of a digit in the usual sans fonts at kFont pixels
// (0.56 em in Liberation Sans and Arial, 0.64 em in DejaVu Sans), and about the mean of
// lowercase words, so that estimated boxes hold the drawn tick labels.
constexpr double kFont = 12;
constexpr double kCharWidth = 0.64 * kFont;
constexpr double kTick = 5;         // tick mark length, outside the plot
constexpr double kGap = 4;          // between a tick mark and its label
constexpr double kYTitleX = 16;     // the rotated y title's baseline
constexpr double kYTitleRight = 4;  // how far its glyphs reach right of the baseline
constexpr double kRowHeight = 16;   // a legend row

double text_width(std::string_view text) { return kCharWidth * static_cast<double>(text.size()); }

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// A tick step of 1, 2 or 5 × 10^k that cuts [0, span] into at most about `parts` pieces.
double tick_step(double span, int parts) {
  if (span <= 0) return 1;
  const double raw = span / parts;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * magnitude) return factor * magnitude;
  }
  return 10 * magnitude;
}

// A tick's value as people write it: at most 3 decimals, no trailing zeros, never an exponent
// ("1500000", "0.25").
std::string tick_label(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", std::round(value * 1000) / 1000);
  std::string label = text;
  while (label.back() == '0') label.pop_back();
  if (label.back() == '.') label.pop_back();
  return label == "-0" ? "0" : label;
}

// The multiples of `step` within [from, to].
std::vector<double> ticks_within(double from, double to, double step) {
  std::vector<double> ticks;
  for (double k = std::ceil(from / step - 1e-9); k * step <= to + step * 1e-9; k += 1) {
    ticks.push_back(k * step);
  }
  return ticks;
}

double widest_label(const std::vector<double>& ticks) {
  double widest = 0;
  for (double t : ticks) widest = std::max(widest, text_width(tick_label(t)));
  return widest;
}

// The x ticks: the most (8 at most) whose labels, `length` pixels of axis for `span`, keep a
// gap of two characters between each other.
std::vector<double> x_ticks(double x0, double x1, double length) {
  std::vector<double> ticks;
  for (int parts = 8; parts >= 1; --parts) {
    const double step = tick_step(x1 - x0, parts);
    ticks = ticks_within(x0, x1, step);
    if (step / (x1 - x0) * length >= widest_label(ticks) + 2 * kCharWidth) break;
  }
  return ticks;
}

// The y axis: its top, a multiple of the step, and the step, giving the most pieces (5 at most)
// of [0, top] that keep labels a line and a half apart over `length` pixels.
struct YScale {
  double top, step;
};

YScale y_scale(double highest, double length) {
  for (int parts = 5; parts > 1; --parts) {
    const double step = tick_step(highest, parts);
    const double top = std::ceil(highest / step) * step;
    if (step / top * length >= 1.5 * kFont) return {top, step};
  }
  const double step = tick_step(highest, 1);
  return {std::ceil(highest / step) * step, step};
}

// The legend's entries: a sample line, the label, then space; rows that fit within `room`.
// Returns each entry's x offset and row.
std::vector<std::pair<double, int>> legend_spots(const std::vector<SvgSeries>& series,
                                                 double room) {
  std::vector<std::pair<double, int>> spots;
  double x = 0;
  int row = 0;
  for (const SvgSeries& s : series) {
    const double width = 36 + text_width(s.label);
    if (x > 0 && x + width - 8 > room) {
      x = 0;
      ++row;
    }
    spots.emplace_back(x, row);
    x += width;
  }
  return spots;
}

std::string line(double x1, double y1, double x2, double y2, std::string_view attributes) {
  return "<line x1=\"" + number(x1) + "\" x2=\"" + number(x2) + "\" y1=\"" + number(y1) +
         "\" y2=\"" + number(y2) + "\" " + std::string(attributes) + "/>\n";
}

std::string text(double x, double y, std::string_view attributes, std::string_view content) {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" " + std::string(attributes) + ">" +
         xml_text(content) + "</text>\n";
}

}  // namespace

std::string line_chart_svg(const SvgChart& chart) {
  // Rows from the top: the title, the plot; under it the ticks, their labels, the x title
  // (baseline 40 px under the plot) and the legend's rows. Left of the plot: the ticks, their
  // labels (right-aligned) and the rotated y title, at least 6 px apart.
  const double width = chart.width, height = chart.height;
  const double right = 16, top = 36, x_title = 40;
  const double x0 = chart.x.empty() ? 0 : chart.x.front();
  const double x1 = chart.x.empty() ? 1 : std::max(chart.x.back(), x0 + 1e-9);
  double y1 = 0;
  for (const SvgSeries& s : chart.series) {
    for (double value : s.y) y1 = std::max(y1, value);
  }
  if (y1 <= 0) y1 = 1;
  const std::vector<std::pair<double, int>> legend = legend_spots(chart.series, width - 2 * right);
  const int rows = legend.empty() ? 0 : legend.back().second + 1;
  const double bottom = x_title + 3 + rows * kRowHeight + 4;
  const double plot_h = std::max(1.0, height - top - bottom);
  const YScale y = y_scale(y1, plot_h);
  const std::vector<double> y_ticks = ticks_within(0, y.top, y.step);
  const double left =
      std::max(64.0, kYTitleX + kYTitleRight + 6 + widest_label(y_ticks) + kGap + kTick);
  const double plot_w = std::max(1.0, width - left - right);
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  const auto py = [&](double value) { return top + plot_h - value / y.top * plot_h; };
  const double base = top + plot_h;  // the x axis

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(chart.width) + "\" height=\"" + std::to_string(chart.height) +
                    "\" viewBox=\"0 0 " + std::to_string(chart.width) + " " +
                    std::to_string(chart.height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  svg += text(left, 22, "class=\"title\" font-size=\"15\" font-weight=\"600\"", chart.title);
  // Grid, y ticks and their labels, centred on the tick.
  for (double t : y_ticks) {
    svg += line(left, py(t), left + plot_w, py(t), "class=\"grid\" stroke=\"#e3e6ec\"");
    svg += line(left - kTick, py(t), left, py(t), "class=\"tick\" stroke=\"#444\"");
    svg += text(left - kTick - kGap, py(t) + 4, "class=\"tick-label\" text-anchor=\"end\"",
                tick_label(t));
  }
  // x ticks; a label that would run off the chart's right edge is left out.
  for (double x : x_ticks(x0, x1, plot_w)) {
    const std::string label = tick_label(x);
    svg += line(px(x), base, px(x), base + kTick, "class=\"tick\" stroke=\"#444\"");
    if (px(x) + text_width(label) / 2 > width - 2) continue;
    svg +=
        text(px(x), base + kTick + kGap + 11, "class=\"tick-label\" text-anchor=\"middle\"", label);
  }
  svg += line(left, base, left + plot_w, base, "class=\"axis\" stroke=\"#444\"");
  svg += text(left + plot_w / 2, base + x_title, "class=\"axis-title\" text-anchor=\"middle\"",
              chart.x_label);
  svg += "<text class=\"axis-title\" transform=\"translate(" + number(kYTitleX) + " " +
         number(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         xml_text(chart.y_label) + "</text>\n";
  // The series, then the legend under the x title.
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const SvgSeries& s = chart.series[i];
    std::string points;
    const std::size_t n = std::min(s.y.size(), chart.x.size());
    for (std::size_t j = 0; j < n; ++j) {
      points += number(px(chart.x[j])) + "," + number(py(std::max(0.0, s.y[j]))) + " ";
    }
    // The same stroke for the line and its sample in the legend.
    const std::string stroke =
        "stroke=\"" + xml_text(s.color) + "\" stroke-width=\"" + number(s.width) + "\"" +
        (s.dash.empty() ? "" : " stroke-dasharray=\"" + xml_text(s.dash) + "\"");
    svg += "<polyline fill=\"none\" " + stroke + " stroke-linejoin=\"round\" points=\"" + points +
           "\"/>\n";
    const double legend_x = right + legend[i].first;
    const double legend_y = base + x_title + 3 + 4 + 11 + legend[i].second * kRowHeight;
    svg += line(legend_x, legend_y - 4, legend_x + 24, legend_y - 4, stroke);
    svg += text(legend_x + 28, legend_y, "class=\"legend\"", s.label);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace spillway::pages
