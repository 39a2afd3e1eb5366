#include "src/cli/replay.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "spillway/limit.h"
#include "spillway/open_store.h"
#include "spillway/store.h"
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
  auto args = Args::parse(argc, argv, first,
                          {"algorithm", "limit", "period", "burst", "max-delay", "backend"});
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
  auto max_delay = args->get_duration("max-delay");
  if (!max_delay) return std::unexpected(max_delay.error());
  auto made = Limit::make(*algorithm, **limit, *period, *burst, max_delay->value_or(0));
  if (!made) {
    return invalid_argument("--limit/--period/--burst/--max-delay: " + made.error().message);
  }
  ReplaySetup setup{.limit = *made, .backend = args->get("backend").value_or("memory"), .file = {}};
  if (!args->positional().empty()) setup.file = args->positional()[0];
  return setup;
}

// replay's output: a header once the trace says whether it has usage columns, then one line per
// request in trace order. A usage line (an actual cost) is a reservation of its cost, committed
// at its done_us; its line is printed once the commit is made, after every line before it.
class ReplayOutput {
 public:
  // `delays`: the limit has a max_delay, and each line says its delay_us.
  ReplayOutput(std::ostream& out, bool delays) : out_(out), delays_(delays) {}

  // The header, once.
  void start(bool usage) {
    if (std::exchange(started_, true)) return;
    usage_ = usage;
    out_ << "t_us,key,cost,allowed,remaining,retry_after_us,reset_after_us"
         << (delays_ ? ",delay_us" : "") << (usage_ ? ",actual,done_us,refunded,charged\n" : "\n");
  }

  // The trace line's reservation (its cost the estimate), kept for its commit when admitted.
  Result<Decision> reserve(Store& store, const Limit& limit, const TraceLine& request,
                           std::size_t number) {
    const KeyedLimit one[] = {{request.key, &limit}};
    const std::string id = new_reservation_id();
    const ReservedLayer layers[] = {{.label = "limit", .metered = true}};
    // Kept until its commit whatever the trace's times (and Redis' own clock) do meanwhile.
    const auto ttl = std::chrono::milliseconds((request.done - request.at) / 1000 + 3'600'000);
    const ReserveSpec spec{.id = id, .ttl = ttl, .layers = layers};
    Result<StoreRequest> made = StoreRequest::make_reserve(one, request.cost, request.at, spec);
    if (!made) return std::unexpected(made.error());
    Result<Decisions> decisions = store.decide_and_wait(*made);
    if (!decisions) return std::unexpected(decisions.error());
    if (decisions->front().allowed) {
      due_.push({.done = request.done,
                 .row = rows_.size() + printed_,
                 .line = number,
                 .id = id,
                 .actual = *request.actual});
    }
    return decisions->front();
  }

  // A line decided: its row, complete unless a commit is due for it.
  void decided(const TraceLine& request, const Decision& d) {
    std::string row = std::to_string(request.at) + ',' + request.key + ',' +
                      std::to_string(request.cost) + ',' + (d.allowed ? "1" : "0") + ',' +
                      std::to_string(d.remaining) + ',' + std::to_string(d.retry_after) + ',' +
                      std::to_string(d.reset_after);
    if (delays_) row += ',' + std::to_string(d.delay);
    const bool waits = request.actual && d.allowed;
    if (usage_) {
      row += request.actual ? ',' + std::to_string(*request.actual) + ',' +
                                  std::to_string(request.done) + (waits ? "" : ",,")
                            : ",,,,";
    }
    rows_.push_back({std::move(row), !waits});
    flush();
  }

  // Commits every reservation due by `now`, earliest first (then in trace order).
  Result<void> settle_until(Store& store, Micros now) {
    while (!due_.empty() && due_.top().done <= now) {
      const Due due = due_.top();
      due_.pop();
      Result<Settled> settled =
          store.settle_and_wait({.id = due.id, .cost = due.actual, .now = due.done});
      if (!settled) {
        return invalid_argument("trace line " + std::to_string(due.line) +
                                ": commit: " + settled.error().message);
      }
      Row& row = rows_[due.row - printed_];
      row.text += ',' + std::to_string(settled->front().refunded) + ',' +
                  std::to_string(settled->front().charged);
      row.done = true;
    }
    flush();
    return {};
  }

 private:
  struct Row {
    std::string text;
    bool done;
  };
  struct Due {
    Micros done;
    std::size_t row;   // its index among every row printed or held
    std::size_t line;  // the trace line, for messages
    std::string id;
    std::int64_t actual;
    bool operator>(const Due& other) const {
      return done != other.done ? done > other.done : row > other.row;
    }
  };

  // Prints the complete rows at the front.
  void flush() {
    while (!rows_.empty() && rows_.front().done) {
      out_ << rows_.front().text << '\n';
      rows_.pop_front();
      ++printed_;
    }
  }

  std::ostream& out_;
  bool started_ = false;
  bool usage_ = false;
  const bool delays_;
  std::deque<Row> rows_;     // held, in trace order
  std::size_t printed_ = 0;  // rows printed before rows_.front()
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
};

}  // namespace

Result<std::optional<TraceLine>> parse_trace_line(std::string_view line, std::size_t max_fields,
                                                  bool usage) {
  line = trim_field(line);
  if (line.empty() || line.front() == '#') return std::optional<TraceLine>{};
  const char* expected = usage ? "t_us,key,cost,actual[,done_us]" : "t_us,key[,cost]";
  std::string_view fields[5];
  std::size_t count = 0;
  while (true) {
    std::size_t comma = line.find(',');
    if (count == max_fields) {
      return invalid_argument(std::string("expected ") + expected + " but found more than " +
                              std::to_string(max_fields) + " fields");
    }
    if (count < 5) fields[count] = trim_field(line.substr(0, comma));
    ++count;
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  if (count < 2)
    return invalid_argument(std::string("expected ") + expected + " but found 1 field");
  const auto time = [](std::string_view field, const char* name) -> Result<Micros> {
    std::optional<std::int64_t> parsed = parse_int(field);
    if (!parsed || *parsed < 0 || *parsed > kMaxNow) {
      return invalid_argument(std::string(name) + " " + quote_for_error(field, 64) +
                              " must be a whole number of µs from 0 to 2^52");
    }
    return *parsed;
  };
  Result<Micros> at = time(fields[0], "t_us");
  if (!at) return std::unexpected(at.error());
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
  TraceLine out{.at = *at, .key = std::string(fields[1]), .cost = cost};
  if (usage && count >= 4 && !fields[3].empty()) {
    std::optional<std::int64_t> actual = parse_int(fields[3]);
    if (!actual || *actual < 0 || *actual > kMaxExact) {
      return invalid_argument("actual " + quote_for_error(fields[3], 64) +
                              " must be a whole number from 0 to 2^52");
    }
    out.actual = *actual;
    out.done = *at;
    if (count >= 5 && !fields[4].empty()) {
      Result<Micros> done = time(fields[4], "done_us");
      if (!done) return std::unexpected(done.error());
      if (*done < *at) {
        return invalid_argument("done_us " + std::to_string(*done) + " is before t_us " +
                                std::to_string(*at));
      }
      out.done = *done;
    }
  } else if (usage && count >= 5 && !fields[4].empty()) {
    return invalid_argument("done_us without an actual cost");
  }
  return out;
}

Result<std::optional<TraceLine>> TraceParser::parse(std::string_view line) {
  const std::string_view content = trim_field(line);
  if (content.empty() || content.front() == '#') return std::optional<TraceLine>{};
  if (std::exchange(started_, true) || trim_field(content.substr(0, content.find(','))) != "t_us") {
    return parse_trace_line(line, max_fields_, usage_);
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
  if (columns.size() > 3 && columns[3] == "actual") {
    if (columns.size() > 5 || (columns.size() == 5 && columns[4] != "done_us")) {
      return invalid_argument(
          "a header with usage columns is t_us,key,cost,actual[,done_us], not " +
          quote_for_error(content, 64));
    }
    usage_ = true;
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

  // With usage columns a line's output waits for its commit: lines are printed in trace order.
  ReplayOutput output(out, setup->limit.max_delay() > 0);
  std::string line;
  TraceParser parser;
  std::size_t number = 1;
  for (; std::getline(trace, line); ++number) {
    auto parsed = parser.parse(line);
    if (!parsed) {
      err << "spillway replay: trace line " << number << ": " << parsed.error().message << "\n";
      return 1;
    }
    if (!*parsed) continue;
    output.start(parser.usage());
    const TraceLine& request = **parsed;
    // Commits due by this line's time come first.
    if (Result<void> settled = output.settle_until(**store, request.at); !settled) {
      err << "spillway replay: " << settled.error().message << "\n";
      return 1;
    }
    Result<Decision> decision =
        request.actual ? output.reserve(**store, setup->limit, request, number)
                       : (*store)->check(request.key, setup->limit, request.cost, request.at);
    if (!decision) {
      err << "spillway replay: trace line " << number << ": " << decision.error().message << "\n";
      return 1;
    }
    output.decided(request, *decision);
  }
  output.start(parser.usage());
  if (Result<void> settled = output.settle_until(**store, kMaxNow); !settled) {
    err << "spillway replay: " << settled.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace spillway::cli
