#include "fuzz/trace_check.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/check_util.h"
#include "src/cli/replay.h"
#include "src/cli/simulate_report.h"
#include "src/cli/simulation.h"

namespace spillway::fuzz {

void check_trace_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<cli::TraceLine> trace;
  std::string_view rest = text;
  std::string_view first_line;
  for (bool first = true; !rest.empty(); first = false) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (first) first_line = line;
    const auto one = cli::parse_trace_line(line);
    const auto two = cli::parse_trace_line(line);
    if (one.has_value() != two.has_value()) violated("parse_trace_line is not deterministic");
    if (!one) {
      if (one.error().code != Errc::kInvalidArgument) violated("error is not invalid_argument");
      if (one.error().message.empty() ||
          one.error().message.find_first_of("\r\n") != std::string::npos) {
        violated("error is not one line", one.error().message);
      }
      continue;
    }
    // With the usage columns (t_us,key,cost,actual[,done_us]): the same line, and an actual cost
    // in range, committed no earlier than it was reserved.
    const auto usage = cli::parse_trace_line(line, 5, true);
    if (usage && *usage && (*usage)->actual) {
      const cli::TraceLine& u = **usage;
      if (*u.actual < 0 || *u.actual > kMaxExact || u.done < u.at) {
        violated("bad usage columns", line);
      }
    }
    if (usage && *usage && *one && (*usage)->at != (**one).at) violated("usage moved t_us", line);
    if (!*one) continue;
    const cli::TraceLine& r = **one;
    if (r.at < 0 || r.at > kMaxNow) violated("t_us out of range", line);
    if (r.key.empty() || r.key.find(',') != std::string::npos) violated("bad key", line);
    if (r.cost < 0) violated("negative cost", line);
    if (trace.size() < 500) trace.push_back(r);
  }

  const cli::SimulationSettings settings{.limit = 3,
                                         .period = kMicrosPerSecond,
                                         .burst = 5,
                                         .algorithms = {kAlgorithms.begin(), kAlgorithms.end()}};
  Result<cli::Simulation> simulation = cli::simulate(trace, settings);
  if (!simulation) violated("simulate failed", simulation.error().message);
  for (const cli::AlgorithmOutcome& o : simulation->outcomes) {
    const auto offered = static_cast<std::int64_t>(trace.size());
    if (o.offered != offered || o.admitted + o.denied != offered) {
      violated("counts do not add up", algorithm_name(o.algorithm));
    }
    const auto sum = [](const std::vector<std::int64_t>& v) {
      return std::accumulate(v.begin(), v.end(), std::int64_t{0});
    };
    if (sum(o.admitted_series) != o.admitted || sum(o.denied_series) != o.denied) {
      violated("series do not add up to the totals", algorithm_name(o.algorithm));
    }
  }
  // In time order, each key's time is the store's: sliding_log, exact, never lets a key have
  // more than the limit in one period, and the others stay within twice the limit plus the
  // burst. (Out of order, the store decides at the key's latest time, which the trace's axis
  // does not show.)
  std::stable_sort(trace.begin(), trace.end(),
                   [](const cli::TraceLine& a, const cli::TraceLine& b) { return a.at < b.at; });
  Result<cli::Simulation> sorted = cli::simulate(trace, settings);
  if (!sorted) violated("simulate failed on the sorted trace", sorted.error().message);
  for (const cli::AlgorithmOutcome& o : sorted->outcomes) {
    const std::int64_t bound = o.algorithm == Algorithm::kSlidingLog ? 3 : 2 * 3 + 5;
    if (o.max_admitted_in_any_period > bound) {
      violated("a key got more than the algorithm allows in one period",
               std::string(algorithm_name(o.algorithm)) + ": " +
                   std::to_string(o.max_admitted_in_any_period));
    }
  }
  const std::string summary = cli::summary_csv(*simulation);
  if (static_cast<std::size_t>(std::count(summary.begin(), summary.end(), '\n')) !=
      1 + simulation->outcomes.size()) {
    violated("the summary is not one line per algorithm");
  }
  // The source name (the first line here) is escaped: the page holds as many "<script" as the
  // same report with an empty name.
  const auto scripts = [](const std::string& page) {
    std::size_t count = 0;
    for (std::size_t at = page.find("<script"); at != std::string::npos;
         at = page.find("<script", at + 1)) {
      ++count;
    }
    return count;
  };
  // The page's own count does not depend on the traffic (its data are numbers and names).
  static const std::size_t own = scripts(cli::report_html(cli::Simulation{}, settings, ""));
  if (scripts(cli::report_html(*simulation, settings, first_line)) != own) {
    violated("the source name added <script elements to the report", first_line);
  }
}

}  // namespace spillway::fuzz
