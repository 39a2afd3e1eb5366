// What `spillway simulate` writes from a Simulation: the summary on stdout, the per-bucket series
// as CSV, the self-contained HTML report, and one SVG chart. Pure functions; thread safe.
// `source` says where the traffic came from ("pattern burst: …" or "trace FILE"); it is escaped.
#pragma once

#include <string>
#include <string_view>

#include "src/cli/simulation.h"

namespace spillway::cli {

// "algorithm,offered,admitted,denied,max_admitted_in_any_period" then one line per algorithm.
std::string summary_csv(const Simulation& simulation);

// "bucket_start_s,bucket_s,algorithm,offered,admitted,denied": one line per bucket and algorithm
// (counts of requests in the bucket; times in seconds from the first request).
std::string series_csv(const Simulation& simulation);

// The HTML report (src/pages/report_page.h): a summary table (table#summary, one
// tr[data-algorithm] per algorithm, td[data-field] cells), notes where a key got more than the
// limit in one period and on the key each algorithm denied most (li[data-most-denied]), and the
// charts drawn by src/pages/web/report.js.
std::string report_html(const Simulation& simulation, const SimulationSettings& settings,
                        std::string_view source);

// Offered and each algorithm's admitted requests per second over time.
std::string overview_svg(const Simulation& simulation, std::string_view source);

}  // namespace spillway::cli
