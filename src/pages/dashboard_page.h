// The live dashboard page of `spillway serve` (GET /dashboard): one self-contained HTML document
// (uPlot, the stylesheet and the script inlined) that polls GET /v1/stats. Built once, on first
// use; the returned view lives as long as the process. Thread safe.
#pragma once

#include <string_view>

namespace spillway::pages {

std::string_view dashboard_html();

}  // namespace spillway::pages
