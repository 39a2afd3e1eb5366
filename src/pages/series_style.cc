#include "src/pages/series_style.h"

#include <cstdio>

#include "src/core/json_writer.h"

namespace spillway::pages {

std::string series_style_json(const SeriesStyle& style) {
  std::string out;
  JsonWriter json(out);
  json.begin_object()
      .member("admitted", style.admitted)
      .member("denied", style.denied)
      .key("dash")
      .begin_array();
  // The dash's numbers are separated by spaces (SVG's form): each one a number of the array.
  std::string_view dash = style.dash;
  while (!dash.empty()) {
    const std::size_t space = dash.find(' ');
    if (space != 0) json.raw(dash.substr(0, space));
    dash.remove_prefix(space == std::string_view::npos ? dash.size() : space + 1);
  }
  char width[32];
  std::snprintf(width, sizeof width, "%g", style.width);
  json.end_array().key("width").raw(width).end_object();
  return out;
}

}  // namespace spillway::pages
