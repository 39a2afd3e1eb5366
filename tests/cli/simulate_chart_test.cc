// The look of simulate's charts: the series styles (src/pages/series_style.h) keep admitted in
// cool colours and denied in warm ones, and give each algorithm a line that leaves the lines
// drawn before it visible; and the SVG chart (`spillway simulate --svg`, the real binary) draws
// them so, also where two algorithms' lines coincide (token_bucket and gcra with equal bursts).
// The HTML report's charts are checked in a real browser: tests/browser/report.test.mjs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "src/pages/series_style.h"
#include "tests/support/process.h"

namespace spillway::pages {
namespace {

// The hue (degrees, 0..360) and HSL saturation (0..1) of a "#rrggbb" colour.
struct Hue {
  double hue = 0, saturation = 0;
};

Hue hue_of(std::string_view colour) {
  EXPECT_EQ(colour.size(), 7u) << colour;
  if (colour.size() != 7 || colour[0] != '#') return {};
  double rgb[3];
  for (int i = 0; i < 3; ++i) {
    rgb[i] = std::stoi(std::string(colour.substr(1 + 2 * i, 2)), nullptr, 16) / 255.0;
  }
  const double max = std::max({rgb[0], rgb[1], rgb[2]});
  const double min = std::min({rgb[0], rgb[1], rgb[2]});
  const double d = max - min;
  if (d == 0) return {};
  double hue = max == rgb[0]   ? 60 * std::fmod((rgb[1] - rgb[2]) / d + 6, 6)
               : max == rgb[1] ? 60 * ((rgb[2] - rgb[0]) / d + 2)
                               : 60 * ((rgb[0] - rgb[1]) / d + 4);
  const double light = (max + min) / 2;
  return {.hue = std::fmod(hue + 360, 360), .saturation = d / (1 - std::fabs(2 * light - 1))};
}

// Green, cyan, blue, purple.
bool cool(std::string_view colour) {
  const Hue h = hue_of(colour);
  return h.saturation > 0.25 && h.hue >= 75 && h.hue <= 290;
}

// Red, orange, amber, pink.
bool warm(std::string_view colour) {
  const Hue h = hue_of(colour);
  return h.saturation > 0.25 && (h.hue <= 60 || h.hue >= 300);
}

TEST(SeriesStyle, AdmittedIsCoolDeniedWarmAndEachLineLeavesTheEarlierOnesShowing) {
  ASSERT_GE(kSeriesStyles.size(), static_cast<std::size_t>(kAlgorithmCount));
  for (std::size_t i = 0; i < kSeriesStyles.size(); ++i) {
    const SeriesStyle& s = kSeriesStyles[i];
    EXPECT_TRUE(cool(s.admitted)) << i << ": admitted " << s.admitted;
    EXPECT_TRUE(warm(s.denied)) << i << ": denied " << s.denied;
    for (std::size_t j = 0; j < i; ++j) {
      const SeriesStyle& earlier = kSeriesStyles[j];
      EXPECT_NE(s.admitted, earlier.admitted) << j << " and " << i;
      EXPECT_NE(s.denied, earlier.denied) << j << " and " << i;
      EXPECT_NE(s.dash, earlier.dash) << j << " and " << i;
      EXPECT_LT(s.width, earlier.width) << i << " is drawn over " << j << ": thinner";
    }
    EXPECT_TRUE(i == 0 || !s.dash.empty()) << i << " is drawn over others: broken";
  }
  EXPECT_FALSE(cool(kOfferedColor) || warm(kOfferedColor)) << "offered is grey";
  EXPECT_EQ(&series_style(kSeriesStyles.size() + 1), &kSeriesStyles[1]) << "wraps";
}

TEST(SeriesStyle, JsonForThePagesScripts) {
  EXPECT_EQ(series_style_json({"#2ca02c", "#ff7f0e", "12 4", 3}),
            R"({"admitted":"#2ca02c","denied":"#ff7f0e","dash":[12,4],"width":3})");
  EXPECT_EQ(series_style_json({"#1f77b4", "#d62728", "", 3.5}),
            R"({"admitted":"#1f77b4","denied":"#d62728","dash":[],"width":3.5})");
  EXPECT_EQ(series_style_json({"#1f77b4", "#d62728", " 10  3 2 3", 2}),
            R"({"admitted":"#1f77b4","denied":"#d62728","dash":[10,3,2,3],"width":2})");
}

// One drawn line of the SVG: its attributes by name.
using ChartAttributes = std::map<std::string, std::string>;

std::vector<ChartAttributes> elements(const std::string& svg, const std::string& tag) {
  std::vector<ChartAttributes> found;
  const std::regex element("<" + tag + R"(\s([^>]*)/>)");
  const std::regex attribute(R"re(([a-z-]+)="([^"]*)")re");
  for (auto e = std::sregex_iterator(svg.begin(), svg.end(), element); e != std::sregex_iterator();
       ++e) {
    ChartAttributes attributes;
    const std::string body = (*e)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attribute);
         a != std::sregex_iterator(); ++a) {
      attributes[(*a)[1]] = (*a)[2];
    }
    found.push_back(std::move(attributes));
  }
  return found;
}

std::string slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(SimulateSvg, AdmittedLinesAreCoolAndCoincidingOnesStayVisible) {
  const std::string path = "/tmp/spillway_sim_chart_" + std::to_string(getpid()) + ".svg";
  // token_bucket and gcra with the same burst (the limit) decide alike: equal lines.
  const testing::BinaryRun run = testing::run_binary(
      "simulate --pattern burst --rate 50 --duration 60s --keys 3 --seed 7 --limit 10 "
      "--period 10s --svg " +
      path);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string svg = slurp(path);
  std::remove(path.c_str());
  const std::vector<ChartAttributes> lines = elements(svg, "polyline");
  ASSERT_EQ(lines.size(), 6u) << "offered and five algorithms:\n" << svg;
  const char* names[] = {"offered",        "fixed_window", "sliding_log",
                         "sliding_window", "token_bucket", "gcra"};
  for (const char* name : names) {
    EXPECT_NE(svg.find(std::string(">") + name + "</text>"), std::string::npos)
        << name << " in the legend";
  }
  EXPECT_EQ(lines[4].at("points"), lines[5].at("points"))
      << "token_bucket and gcra coincide in this run (the test needs it)";
  EXPECT_FALSE(cool(lines[0].at("stroke")) || warm(lines[0].at("stroke")))
      << "offered is grey: " << lines[0].at("stroke");

  // The legend's sample of each line: the <line> elements with a width (the grid's and the
  // axis' have none).
  std::vector<ChartAttributes> samples = elements(svg, "line");
  std::erase_if(samples, [](const ChartAttributes& a) { return !a.contains("stroke-width"); });
  ASSERT_EQ(samples.size(), lines.size()) << svg;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (const char* a : {"stroke", "stroke-width", "stroke-dasharray"}) {
      EXPECT_EQ(samples[i].contains(a) ? samples[i].at(a) : "",
                lines[i].contains(a) ? lines[i].at(a) : "")
          << names[i] << ": the legend's " << a;
    }
  }

  for (std::size_t i = 1; i < lines.size(); ++i) {
    const ChartAttributes& later = lines[i];
    EXPECT_TRUE(cool(later.at("stroke"))) << names[i] << " admitted: " << later.at("stroke");
    ASSERT_TRUE(later.contains("stroke-width")) << names[i];
    for (std::size_t j = 1; j < i; ++j) {
      const ChartAttributes& earlier = lines[j];
      const std::string pair = std::string(names[j]) + " and " + names[i] + " (drawn over it)";
      EXPECT_NE(later.at("stroke"), earlier.at("stroke")) << pair << ": one colour";
      EXPECT_LT(std::stod(later.at("stroke-width")), std::stod(earlier.at("stroke-width")))
          << pair << ": the one on top must be thinner";
      ASSERT_TRUE(later.contains("stroke-dasharray")) << pair << ": the one on top is solid";
      EXPECT_NE(later.at("stroke-dasharray"),
                earlier.contains("stroke-dasharray") ? earlier.at("stroke-dasharray") : "")
          << pair << ": one dash";
    }
  }
}

}  // namespace
}  // namespace spillway::pages
