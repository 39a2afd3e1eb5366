// A self-contained report page (no network needed to open it): `body_html` (already escaped) and
// the JSON the page's script reads (<script id="report-data">), with uPlot, the stylesheet,
// src/pages/web/axes.js and src/pages/web/report.js inlined. Pure function; thread safe.
#pragma once

#include <string>
#include <string_view>

namespace spillway::pages {

std::string report_html(std::string_view title, std::string_view body_html,
                        std::string_view data_json);

}  // namespace spillway::pages
