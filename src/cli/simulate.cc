#include "src/cli/simulate.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <utility>

#include "spillway/store.h"
#include "src/cli/args.h"
#include "src/cli/replay.h"
#include "src/cli/simulate_report.h"
#include "src/cli/simulation.h"
#include "src/cli/traffic_pattern.h"
#include "src/core/text.h"

namespace spillway::cli {
namespace {

struct Setup {
  SimulationSettings settings;
  std::optional<std::string> trace_file;
  PatternOptions pattern;
  std::optional<std::string> out, csv, svg, trace_out;
};

// "100", "100/s", "6000/min", "5/100ms": requests per second, > 0.
Result<double> parse_per_second(const std::string& text) {
  if (std::optional<std::int64_t> whole = parse_int(text); whole && *whole > 0) {
    return static_cast<double>(*whole);
  }
  Result<Rate> rate = parse_rate(text);
  if (!rate) return invalid_argument("--rate: " + rate.error().message);
  return static_cast<double>(rate->limit) * 1e6 / static_cast<double>(rate->period);
}

Result<std::vector<Algorithm>> parse_algorithms(const std::string& text) {
  std::vector<Algorithm> algorithms;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = trim_back(trim_front(rest.substr(0, comma)), " \t");
    Result<Algorithm> a = parse_algorithm(name);
    if (!a) return invalid_argument("--algorithms: " + a.error().message);
    if (std::find(algorithms.begin(), algorithms.end(), *a) != algorithms.end()) {
      return invalid_argument("--algorithms: \"" + std::string(name) + "\" is listed twice");
    }
    algorithms.push_back(*a);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return algorithms;
}

Result<Setup> parse_setup(int argc, char** argv, int first) {
  auto args =
      Args::parse(argc, argv, first,
                  {"trace", "pattern", "rate", "duration", "keys", "seed", "limit", "period",
                   "burst", "max-delay", "algorithms", "out", "csv", "svg", "trace-out"});
  if (!args) return std::unexpected(args.error());
  if (!args->positional().empty()) {
    return invalid_argument("unexpected argument \"" + args->positional()[0] +
                            "\" (the trace is given with --trace FILE)");
  }
  if (args->has("trace") == args->has("pattern")) {
    return invalid_argument("give one of --trace FILE or --pattern NAME");
  }
  for (const char* required : {"limit", "period"}) {
    if (!args->has(required)) {
      return invalid_argument(std::string("--") + required + " is required");
    }
  }
  Setup setup;
  auto limit = args->get_int("limit", 1, kMaxExact);
  if (!limit) return std::unexpected(limit.error());
  setup.settings.limit = **limit;
  auto period = parse_duration(*args->get("period"));
  if (!period) return invalid_argument("--period: " + period.error().message);
  setup.settings.period = *period;
  auto burst = args->get_int("burst", 1, kMaxExact);
  if (!burst) return std::unexpected(burst.error());
  setup.settings.burst = *burst;
  auto max_delay = args->get_duration("max-delay");
  if (!max_delay) return std::unexpected(max_delay.error());
  setup.settings.max_delay = max_delay->value_or(0);
  if (args->has("algorithms")) {
    auto algorithms = parse_algorithms(*args->get("algorithms"));
    if (!algorithms) return std::unexpected(algorithms.error());
    setup.settings.algorithms = *algorithms;
  } else {
    for (Algorithm a : kAlgorithms) {
      // With a delay, the algorithms that take one: a window compared without it would not say
      // what the delay does.
      if (setup.settings.max_delay == 0 || takes_max_delay(a)) {
        setup.settings.algorithms.push_back(a);
      }
    }
  }
  if (setup.settings.max_delay > 0) {
    for (Algorithm a : setup.settings.algorithms) {
      if (!takes_max_delay(a)) {
        return invalid_argument("--max-delay: " + max_delay_not_taken_message(a) +
                                "; leave it out of --algorithms");
      }
    }
  }
  if (args->has("trace")) {
    for (const char* only : {"rate", "duration", "keys", "seed", "trace-out"}) {
      if (args->has(only)) {
        return invalid_argument(std::string("--") + only + " applies to --pattern, not --trace");
      }
    }
    setup.trace_file = *args->get("trace");
  } else {
    setup.pattern.name = *args->get("pattern");
    if (args->has("rate")) {
      auto rate = parse_per_second(*args->get("rate"));
      if (!rate) return std::unexpected(rate.error());
      setup.pattern.rate = *rate;
    }
    if (args->has("duration")) {
      auto duration = parse_duration(*args->get("duration"));
      if (!duration) return invalid_argument("--duration: " + duration.error().message);
      if (*duration > kMaxNow) {
        return invalid_argument("--duration: at most 2^52 µs (about 142 years)");
      }
      setup.pattern.duration = *duration;
    }
    auto keys = args->get_int("keys", 1, 1'000'000);
    if (!keys) return std::unexpected(keys.error());
    if (*keys) setup.pattern.keys = static_cast<int>(**keys);
    auto seed = args->get_int("seed", 0, std::numeric_limits<std::int64_t>::max());
    if (!seed) return std::unexpected(seed.error());
    if (*seed) setup.pattern.seed = static_cast<std::uint64_t>(**seed);
    setup.pattern.limit_per_second = static_cast<double>(setup.settings.limit) * 1e6 /
                                     static_cast<double>(setup.settings.period);
    if (!args->has("rate")) setup.pattern.rate = default_rate(setup.pattern);
  }
  setup.out = args->get("out");
  setup.csv = args->get("csv");
  setup.svg = args->get("svg");
  setup.trace_out = args->get("trace-out");
  // "-" is standard output, for one of them at most: two would be mixed into one stream.
  std::optional<std::string> to_stdout;
  for (const auto& [option, path] :
       {std::pair{"--out", &setup.out}, std::pair{"--csv", &setup.csv},
        std::pair{"--svg", &setup.svg}, std::pair{"--trace-out", &setup.trace_out}}) {
    if (*path != "-") continue;
    if (to_stdout) {
      return invalid_argument(*to_stdout + " and " + option +
                              " both write to standard output (\"-\"); one of them at most");
    }
    to_stdout = option;
  }
  return setup;
}

// Whether one of the files goes to standard output ("-"): the summary then goes to stderr.
bool writes_to_stdout(const Setup& setup) {
  for (const std::optional<std::string>* path :
       {&setup.out, &setup.csv, &setup.svg, &setup.trace_out}) {
    if (*path == "-") return true;
  }
  return false;
}

// Reads a trace as `spillway replay` does (a file, or `in` for "-"); errors name the line.
Result<std::vector<TraceLine>> read_trace(const std::string& path, std::istream& in) {
  std::ifstream file;
  if (path != "-") {
    errno = 0;
    file.open(path);
    if (!file) {
      return invalid_argument("--trace: cannot open trace file \"" + path +
                              "\": " + (errno != 0 ? std::strerror(errno) : "cannot be read"));
    }
  }
  std::istream& source = path == "-" ? in : file;
  std::vector<TraceLine> trace;
  std::string line;
  TraceParser parser;
  for (std::size_t number = 1; std::getline(source, line); ++number) {
    auto parsed = parser.parse(line);
    if (!parsed) {
      return std::unexpected(Error{
          Errc::kInternal, "trace line " + std::to_string(number) + ": " + parsed.error().message});
    }
    if (!*parsed) continue;
    // What the store would refuse (a key over its length bound, a cost past 2^52), named by line.
    if (Result<void> valid = validate_check((*parsed)->key, (*parsed)->cost, (*parsed)->at);
        !valid) {
      return std::unexpected(Error{
          Errc::kInternal, "trace line " + std::to_string(number) + ": " + valid.error().message});
    }
    trace.push_back(std::move(**parsed));
  }
  return trace;
}

// Writes `text` to `path`, or to `out` for "-"; a file written is announced on `err` ("wrote
// report.html"), a failure gives the system's reason ("cannot write /x/r.html: No such file or
// directory").
bool write_file(const std::string& path, const std::string& text, const char* option,
                std::ostream& out, std::ostream& err) {
  if (path == "-") {
    out << text;
    out.flush();
    if (out) return true;
    err << "spillway simulate: " << option << ": cannot write standard output\n";
    return false;
  }
  errno = 0;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  bool written = file != nullptr && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int error = errno;
  if (file != nullptr && std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) {
    err << "spillway simulate: " << option << ": cannot write " << path << ": "
        << (error != 0 ? std::strerror(error) : "write failed") << "\n";
    return false;
  }
  err << "spillway simulate: wrote " << path << "\n";
  return true;
}

std::string describe(const Setup& setup, std::size_t requests) {
  if (setup.trace_file) return "trace " + *setup.trace_file;
  const PatternOptions& p = setup.pattern;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", p.rate);
  return "pattern " + p.name + ": " + rate + "/s for " + format_duration(p.duration) + ", " +
         std::to_string(p.keys) + (p.keys == 1 ? " key" : " keys") + ", seed " +
         std::to_string(p.seed) + " (" + std::to_string(requests) + " requests)";
}

}  // namespace

int run_simulate(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                 std::ostream& err) {
  Result<Setup> setup = parse_setup(argc, argv, first);
  if (!setup) {
    err << "spillway simulate: " << setup.error().message << "\n";
    return 2;
  }
  Result<std::vector<TraceLine>> trace =
      setup->trace_file ? read_trace(*setup->trace_file, in) : generate_pattern(setup->pattern);
  if (!trace) {
    err << "spillway simulate: " << trace.error().message << "\n";
    return trace.error().code == Errc::kInvalidArgument ? 2 : 1;
  }
  Result<Simulation> simulation = simulate(*trace, setup->settings);
  if (!simulation) {
    err << "spillway simulate: " << simulation.error().message << "\n";
    return simulation.error().code == Errc::kInvalidArgument ? 2 : 1;
  }
  const std::string source = describe(*setup, trace->size());
  if (setup->trace_out) {
    std::string text = "# t_us,key,cost: " + source + "\n";
    for (const TraceLine& r : *trace) {
      text += std::to_string(r.at) + "," + r.key + "," + std::to_string(r.cost) + "\n";
    }
    if (!write_file(*setup->trace_out, text, "--trace-out", out, err)) return 1;
  }
  if (setup->out && !write_file(*setup->out, report_html(*simulation, setup->settings, source),
                                "--out", out, err)) {
    return 1;
  }
  if (setup->csv && !write_file(*setup->csv, series_csv(*simulation), "--csv", out, err)) {
    return 1;
  }
  if (setup->svg &&
      !write_file(*setup->svg, overview_svg(*simulation, source), "--svg", out, err)) {
    return 1;
  }
  (writes_to_stdout(*setup) ? err : out) << summary_csv(*simulation);
  return 0;
}

}  // namespace spillway::cli
