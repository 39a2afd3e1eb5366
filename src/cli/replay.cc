#include "src/cli/replay.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

#include "spillway/limit.h"
#include "spillway/open_store.h"
#include "src/cli/args.h"
#include "src/core/text.h"

namespace spillway::cli {
namespace {

// A line or a field without blanks at either end, nor '\r' at the end (a CRLF line's, mixed with
// blanks or not); a '\r' at the front is part of the field.
std::string_view trim_field(std::string_view s) { return trim_back(trim_front(s), " \t\r"); }

// A random id that keeps the keys of one replay run apart from every other run's.
std::string run_id() {
  std::random_device random;
  char id[17];
  std::snprintf(id, sizeof(id), "%08x%08x", random(), random());
  return id;
}

struct ReplaySetup {
  Limit limit;
  std::string backend;
  std::optional<std::string> file;
};

Result<ReplaySetup> parse_setup(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, {"algorithm", "limit", "period", "burst", "backend"});
  if (!args) return std::unexpected(args.error());
  for (const char* required : {"algorithm", "limit", "period"}) {
    if (!args->has(required))
      return invalid_argument(std::string("--") + required + " is required");
  }
  if (args->positional().size() > 1) {
    return invalid_argument("unexpected argument \"" + args->positional()[1] +
                            "\" (one FILE at most)");
  }
  auto algorithm = parse_algorithm(*args->get("algorithm"));
  if (!algorithm) return invalid_argument("--algorithm: " + algorithm.error().message);
  auto limit = args->get_int("limit", 1, kMaxExact);
  if (!limit) return std::unexpected(limit.error());
  auto period = parse_duration(*args->get("period"));
  if (!period) return invalid_argument("--period: " + period.error().message);
  auto burst = args->get_int("burst", 1, kMaxExact);
  if (!burst) return std::unexpected(burst.error());
  auto made = Limit::make(*algorithm, **limit, *period, *burst);
  if (!made) return invalid_argument("--limit/--period/--burst: " + made.error().message);
  ReplaySetup setup{.limit = *made, .backend = args->get("backend").value_or("memory"), .file = {}};
  if (!args->positional().empty()) setup.file = args->positional()[0];
  return setup;
}

}  // namespace

Result<std::optional<TraceLine>> parse_trace_line(std::string_view line, std::size_t max_fields) {
  line = trim_field(line);
  if (line.empty() || line.front() == '#') return std::optional<TraceLine>{};
  std::string_view fields[3];
  std::size_t count = 0;
  while (true) {
    std::size_t comma = line.find(',');
    if (count == max_fields) {
      return invalid_argument("expected t_us,key[,cost] but found more than " +
                              std::to_string(max_fields) + " fields");
    }
    if (count < 3) fields[count] = trim_field(line.substr(0, comma));
    ++count;
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  if (count < 2) return invalid_argument("expected t_us,key[,cost] but found 1 field");
  std::optional<std::int64_t> at = parse_int(fields[0]);
  if (!at || *at < 0 || *at > kMaxNow) {
    return invalid_argument("t_us " + quote_for_error(fields[0], 64) +
                            " must be a whole number of µs from 0 to 2^52");
  }
  if (fields[1].empty()) return invalid_argument("key is empty");
  std::int64_t cost = 1;
  if (count >= 3) {
    std::optional<std::int64_t> parsed = parse_int(fields[2]);
    if (!parsed || *parsed < 0) {
      return invalid_argument("cost " + quote_for_error(fields[2], 64) +
                              " must be a whole number >= 0");
    }
    cost = *parsed;
  }
  return TraceLine{.at = *at, .key = std::string(fields[1]), .cost = cost};
}

Result<std::optional<TraceLine>> TraceParser::parse(std::string_view line) {
  const std::string_view content = trim_field(line);
  if (content.empty() || content.front() == '#') return std::optional<TraceLine>{};
  if (std::exchange(started_, true) || trim_field(content.substr(0, content.find(','))) != "t_us") {
    return parse_trace_line(line, max_fields_);
  }
  // The header: t_us,key[,cost[,…]].
  std::vector<std::string_view> columns;
  for (std::string_view rest = content;;) {
    const std::size_t comma = rest.find(',');
    columns.push_back(trim_field(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (columns.size() < 2 || columns[1] != "key" || (columns.size() > 2 && columns[2] != "cost")) {
    return invalid_argument("a header must start t_us,key[,cost] but is " +
                            quote_for_error(content, 64));
  }
  max_fields_ = std::max<std::size_t>(3, columns.size());
  return std::optional<TraceLine>{};
}

int run_replay(int argc, char** argv, int first, std::istream& in, std::ostream& out,
               std::ostream& err) {
  auto setup = parse_setup(argc, argv, first);
  if (!setup) {
    err << "spillway replay: " << setup.error().message << "\n";
    return 2;
  }
  std::ifstream file;
  const bool from_file = setup->file && *setup->file != "-";  // "-": standard input
  if (from_file) {
    errno = 0;
    file.open(*setup->file);
    if (!file) {
      err << "spillway replay: cannot open trace file \"" << *setup->file
          << "\": " << (errno != 0 ? std::strerror(errno) : "cannot be read") << "\n";
      return 2;
    }
  }
  std::istream& trace = from_file ? file : in;
  // Every request carries its own `now`: no background sweep on another clock, and on Redis a
  // prefix of this run's own (a rerun starts from idle) and a TTL floor (trace time is not the
  // server's clock, so keys must not expire by the wall clock mid-trace).
  auto store =
      open_store(setup->backend, {.memory = {.clock = std::make_shared<ManualClock>(),
                                             .sweep_interval = std::chrono::milliseconds(0)},
                                  .redis = {.key_prefix = "spillway:replay:" + run_id(),
                                            .ttl_floor = std::chrono::minutes(10)}});
  if (!store) {
    err << "spillway replay: --backend: " << store.error().message << "\n";
    return store.error().code == Errc::kInvalidArgument ? 2 : 1;
  }

  out << "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us\n";
  std::string line;
  TraceParser parser;
  for (std::size_t number = 1; std::getline(trace, line); ++number) {
    auto parsed = parser.parse(line);
    if (!parsed) {
      err << "spillway replay: trace line " << number << ": " << parsed.error().message << "\n";
      return 1;
    }
    if (!*parsed) continue;
    const TraceLine& request = **parsed;
    auto decision = (*store)->check(request.key, setup->limit, request.cost, request.at);
    if (!decision) {
      err << "spillway replay: trace line " << number << ": " << decision.error().message << "\n";
      return 1;
    }
    out << request.at << ',' << request.key << ',' << request.cost << ','
        << (decision->allowed ? 1 : 0) << ',' << decision->remaining << ',' << decision->retry_after
        << ',' << decision->reset_after << '\n';
  }
  return 0;
}

}  // namespace spillway::cli
