#include "src/pages/series_style.h"

#include <cstdio>

#include "src/pages/html.h"

namespace spillway::pages {

std::string series_style_json(const SeriesStyle& style) {
  // The dash's numbers are separated by spaces (SVG's form); JSON wants commas.
  std::string dash = "[";
  bool space = false;
  for (char c : style.dash) {
    if (c == ' ') {
      space = true;
      continue;
    }
    if (space && dash.size() > 1) dash += ',';
    space = false;
    dash += c;
  }
  dash += ']';
  char width[32];
  std::snprintf(width, sizeof width, "%g", style.width);
  return "{\"admitted\":" + json_string(style.admitted) +
         ",\"denied\":" + json_string(style.denied) + ",\"dash\":" + dash + ",\"width\":" + width +
         "}";
}

}  // namespace spillway::pages
