// The geometry of the SVG chart (src/pages/svg_chart.h), read back from the SVG it writes: on
// charts from 900 × 360 down to 320 × 180 px and for values from thousandths to billions, no
// tick label meets a tick mark, another tick label, an axis title or the legend, and no text
// but the chart's title runs off the chart; small charts get fewer ticks; labels never use an
// exponent. Text boxes are this
// test's own estimate, above what the usual sans fonts draw at 12 px (a digit is at most 0.64
// em wide; the em box reaches 0.92 em above the baseline and 0.25 em below). The real fonts are
// measured in a browser by tests/browser/report.test.mjs.
#include "src/pages/svg_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace spillway::pages {
namespace {

constexpr double kEm = 12;  // the chart's font size, px

struct Box {
  double left, top, right, bottom;
};

// Whether a and b share more than a hairline (0.1 px) both ways.
bool overlap(const Box& a, const Box& b) {
  return std::min(a.right, b.right) - std::max(a.left, b.left) > 0.1 &&
         std::min(a.bottom, b.bottom) - std::max(a.top, b.top) > 0.1;
}

std::string describe(const Box& b) {
  return "[" + std::to_string(b.left) + ", " + std::to_string(b.top) + ", " +
         std::to_string(b.right) + ", " + std::to_string(b.bottom) + "]";
}

using Attributes = std::map<std::string, std::string>;

Attributes attributes_of(const std::string& text) {
  Attributes found;
  const std::regex attribute(R"re(([a-z0-9-]+)="([^"]*)")re");
  for (auto a = std::sregex_iterator(text.begin(), text.end(), attribute);
       a != std::sregex_iterator(); ++a) {
    found[(*a)[1]] = (*a)[2];
  }
  return found;
}

// One drawn <text>: its class, its content and its estimated box.
struct Text {
  std::string kind, content;
  Box box;
};

// The box of a <text>'s glyphs: anchored at (x, y) (the baseline), or rotated by -90° about the
// translate() of its transform.
Box text_box(const Attributes& a, const std::string& content) {
  const double size = a.contains("font-size") ? std::stod(a.at("font-size")) : kEm;
  const double width = 0.64 * size * static_cast<double>(content.size());
  const double shift = a.contains("text-anchor") && a.at("text-anchor") == "middle" ? width / 2
                       : a.contains("text-anchor") && a.at("text-anchor") == "end"  ? width
                                                                                    : 0;
  if (a.contains("transform")) {
    std::smatch m;
    const std::string& transform = a.at("transform");
    EXPECT_TRUE(std::regex_search(
        transform, m, std::regex(R"(translate\(([-0-9.]+) ([-0-9.]+)\) rotate\(-90\))")))
        << transform;
    const double x = std::stod(m[1]), y = std::stod(m[2]);
    return {x - 0.92 * size, y - width + shift, x + 0.25 * size, y + shift};
  }
  const double x = std::stod(a.at("x")), y = std::stod(a.at("y"));
  return {x - shift, y - 0.92 * size, x - shift + width, y + 0.25 * size};
}

std::vector<Text> texts_of(const std::string& svg) {
  std::vector<Text> texts;
  const std::regex element(R"(<text\s([^>]*)>([^<]*)</text>)");
  for (auto e = std::sregex_iterator(svg.begin(), svg.end(), element); e != std::sregex_iterator();
       ++e) {
    const Attributes a = attributes_of((*e)[1]);
    const std::string content = (*e)[2];
    texts.push_back({a.contains("class") ? a.at("class") : "", content, text_box(a, content)});
  }
  return texts;
}

// The tick marks: their box, widened by half a pixel (the stroke).
std::vector<Box> ticks_of(const std::string& svg) {
  std::vector<Box> ticks;
  const std::regex element(R"(<line\s([^>]*)/>)");
  for (auto e = std::sregex_iterator(svg.begin(), svg.end(), element); e != std::sregex_iterator();
       ++e) {
    const Attributes a = attributes_of((*e)[1]);
    if (!a.contains("class") || a.at("class") != "tick") continue;
    const double x1 = std::stod(a.at("x1")), x2 = std::stod(a.at("x2"));
    const double y1 = std::stod(a.at("y1")), y2 = std::stod(a.at("y2"));
    ticks.push_back({std::min(x1, x2) - 0.5, std::min(y1, y2) - 0.5, std::max(x1, x2) + 0.5,
                     std::max(y1, y2) + 0.5});
  }
  return ticks;
}

// A chart of simulate's kind: offered and five algorithms over `points` x values from 0 to
// `x_end`, the highest y `y_top`.
SvgChart chart_of(int width, int height, double x_end, double y_top) {
  SvgChart chart{.title = "Admitted per second",
                 .x_label = "seconds",
                 .y_label = "requests / s",
                 .width = width,
                 .height = height};
  const int points = 50;
  for (int i = 0; i < points; ++i) chart.x.push_back(x_end * i / (points - 1));
  for (const char* name :
       {"offered", "fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"}) {
    SvgSeries series{.label = name, .color = "#1f77b4"};
    for (int i = 0; i < points; ++i) series.y.push_back(y_top * ((i * 7) % points) / points);
    series.y[3] = y_top;
    chart.series.push_back(std::move(series));
  }
  return chart;
}

// Every way in which the chart's tick labels collide, as sentences.
std::vector<std::string> collisions(const std::string& svg, int width, int height) {
  std::vector<std::string> found;
  const std::vector<Text> texts = texts_of(svg);
  const std::vector<Box> ticks = ticks_of(svg);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const Text& t = texts[i];
    if (t.kind == "title") continue;  // the chart's title may be cut by a narrow chart
    const std::string name = t.kind + " \"" + t.content + "\" " + describe(t.box);
    if (t.box.left < 0 || t.box.top < 0 || t.box.right > width || t.box.bottom > height) {
      found.push_back(name + " runs off the chart");
    }
    if (t.kind != "tick-label") continue;
    for (const Box& tick : ticks) {
      if (overlap(t.box, tick)) found.push_back(name + " meets the tick " + describe(tick));
    }
    for (std::size_t j = 0; j < texts.size(); ++j) {
      if (j != i && overlap(t.box, texts[j].box)) {
        found.push_back(name + " meets " + texts[j].kind + " \"" + texts[j].content + "\" " +
                        describe(texts[j].box));
      }
    }
  }
  return found;
}

std::size_t count_of(const std::vector<Text>& texts, const std::string& kind) {
  return static_cast<std::size_t>(
      std::count_if(texts.begin(), texts.end(), [&](const Text& t) { return t.kind == kind; }));
}

TEST(SvgChart, TickLabelsMeetNoTickLabelOrTitleOnAnySizeOrScale) {
  const std::pair<int, int> sizes[] = {{900, 360}, {520, 220}, {320, 180}};
  const double x_ends[] = {1.2, 59.5, 3600, 100000};
  const double y_tops[] = {0.004, 7, 300, 150000, 1.5e6, 4e9};
  for (const auto& [width, height] : sizes) {
    for (double x_end : x_ends) {
      for (double y_top : y_tops) {
        const std::string svg = line_chart_svg(chart_of(width, height, x_end, y_top));
        const std::vector<Text> texts = texts_of(svg);
        const std::string where = std::to_string(width) + "x" + std::to_string(height) + ", x to " +
                                  std::to_string(x_end) + ", y to " + std::to_string(y_top);
        EXPECT_GE(count_of(texts, "tick-label"), 4u) << where << "\n" << svg;
        EXPECT_EQ(count_of(texts, "axis-title"), 2u) << where;
        EXPECT_GE(ticks_of(svg).size(), 4u) << where;
        for (const std::string& c : collisions(svg, width, height))
          ADD_FAILURE() << where << ": " << c;
      }
    }
  }
}

TEST(SvgChart, ASmallChartHasFewerTicks) {
  const std::size_t wide =
      count_of(texts_of(line_chart_svg(chart_of(900, 360, 100000, 300))), "tick-label");
  const std::size_t small =
      count_of(texts_of(line_chart_svg(chart_of(320, 180, 100000, 300))), "tick-label");
  EXPECT_LT(small, wide);
  EXPECT_GE(small, 4u) << "still two on each axis";
}

TEST(SvgChart, LabelsAreWrittenOutNeverWithAnExponent) {
  std::vector<std::string> labels;
  for (double y_top : {1.5e6, 4e9, 0.004}) {
    for (const Text& t : texts_of(line_chart_svg(chart_of(900, 360, 59.5, y_top)))) {
      if (t.kind == "tick-label") labels.push_back(t.content);
    }
  }
  for (const std::string& label : labels) {
    EXPECT_TRUE(std::regex_match(label, std::regex(R"(\d+(\.\d{1,3})?)"))) << label;
  }
  EXPECT_NE(std::find(labels.begin(), labels.end(), "1500000"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "0.004"), labels.end());
}

// The y axis moves right as its labels grow: the y title stays left of all of them.
TEST(SvgChart, TheYAxisIsAsWideAsItsLabels) {
  const auto axis_x = [](const std::string& svg) {
    std::smatch m;
    EXPECT_TRUE(
        std::regex_search(svg, m, std::regex(R"re(<line x1="([0-9.]+)"[^>]*class="axis")re")))
        << svg;
    return m.empty() ? 0.0 : std::stod(m[1]);
  };
  const double narrow = axis_x(line_chart_svg(chart_of(900, 360, 60, 300)));
  const double wide = axis_x(line_chart_svg(chart_of(900, 360, 60, 4e9)));
  // 4000000000 is 7 digits longer than 300: at least 7 digits of Liberation Sans (0.56 em).
  EXPECT_GE(wide - narrow, 7 * 0.56 * kEm);
}

}  // namespace
}  // namespace spillway::pages
