// The help texts (see usage.h). The values an option takes come from where they are defined
// (kAlgorithms, pattern_names(), PatternOptions' defaults, kBenchKeyPrefix), so the help cannot
// fall behind them.
#include "src/cli/usage.h"

#include <array>
#include <vector>

#include "spillway/algorithm.h"
#include "spillway/duration.h"
#include "src/cli/bench.h"
#include "src/cli/traffic_pattern.h"
#include "src/core/backend_schemes.h"

namespace spillway::cli {
namespace {

constexpr std::size_t kWidth = 100;  // columns of a help line
constexpr std::size_t kIndent = 25;
constexpr char kNoBreak = '\x1f';  // a blank that wrapping keeps: "default: 1s" stays on one line
                                   // // where an option's text starts

struct Option {
  std::string flag;   // "--limit L"
  std::string about;  // what it is and the values it takes
  std::string given;  // "required", or what applies without it ("default: 1s")
};

struct Help {
  std::string_view name;
  std::string_view summary;   // one line, for the overview
  std::string_view synopsis;  // after "usage: spillway "
  std::string about;          // what the command does
  std::vector<Option> options;
  std::string notes;  // after the options: shared value formats
};

constexpr std::array<std::string_view, 7> kNames = {"serve",    "replay",  "simulate", "bench",
                                                    "validate", "inspect", "tenants"};

std::string joined(auto names) {
  std::string out;
  for (std::string_view name : names) out.append(out.empty() ? "" : ", ").append(name);
  return out;
}

std::string algorithm_names() {
  std::vector<std::string_view> names;
  for (Algorithm a : kAlgorithms) names.push_back(algorithm_name(a));
  return joined(names);
}

// `text` (from `column` on) wrapped at kWidth, its lines after the first starting at column
// `indent`; then a newline.
void append_wrapped(std::string& out, std::string_view text, std::size_t column,
                    std::size_t indent) {
  bool line_start = true;  // nothing written on this line yet
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    if (!line_start && column + 1 + word.size() > kWidth) {
      out.append("\n").append(indent, ' ');
      column = indent;
    } else if (!line_start) {
      out.push_back(' ');
      ++column;
    }
    line_start = false;
    for (const char c : word) out.push_back(c == kNoBreak ? ' ' : c);
    column += word.size();
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  out.push_back('\n');
}

const std::string& durations() {
  static const std::string text =
      "DURATION: a whole number and a unit, no blank between: us, ms, s, m, h, d, or sec, min, "
      "hour, day and their plurals (250ms, 90s, 1min, 2hours).";
  return text;
}

const std::string& backends() {
  static const std::string text =
      "URL (backends): " + backend_url_forms() + "; memory keeps the counters in the process.";
  return text;
}

std::vector<Option> limit_options(std::string_view limit_given) {
  return {
      {"--algorithm NAME", "one of " + algorithm_names(), std::string(limit_given)},
      {"--limit L", "requests admitted per period, a whole number from 1 to 2^52",
       limit_given == "required" ? "required" : "default: 100"},
      {"--period P", "the period, a DURATION",
       limit_given == "required" ? "required" : "default: 1s"},
      {"--burst B", "token_bucket and gcra only: the most admitted at once, 1 to 2^52",
       "default: L"},
      {"--max-delay D",
       "token_bucket and gcra only: admit a request that fits within this wait, charged now, "
       "and report its delay (shaping, docs/SPEC.md §2.2)",
       "default: none"},
  };
}

std::vector<Help> all_help() {
  std::vector<Help> help;
  help.push_back(
      {"serve",
       "the HTTP server (and Envoy's rate limit service over gRPC)",
       "serve [--config FILE] [--listen HOST:PORT] [--backend URL]\n"
       "                      [--grpc-listen HOST:PORT --rls-config PATH] [--require-backend]",
       "The HTTP server: /v1/check, /v1/auth (nginx auth_request), /v1/limit, /v1/commit and "
       "/v1/cancel (usage-based limits), /metrics, /v1/stats and /dashboard. A flag overrides the "
       "config file's setting.",
       {{"--config FILE", "the YAML config (docs/SPEC.md §7), reloaded on SIGHUP",
         "default: none: the built-in seed policy, every setting at its default"},
        {"--listen HOST:PORT", "where HTTP is served",
         "default: server.listen, else 127.0.0.1:8080"},
        {"--backend URL", "where counters live (URL below)", "default: backend.url, else memory"},
        {"--grpc-listen HOST:PORT",
         "also serve Envoy's rate limit service (gRPC) there, on --rls-config's rules",
         "default: server.grpc_listen, else off"},
        {"--rls-config PATH", "envoyproxy/ratelimit's rules: a YAML file or a directory of them",
         "default: rls.config, else none (required by --grpc-listen)"},
        {"--require-backend",
         "exit 1 when the backend does not answer at start, instead of serving on_error's answer "
         "until it does",
         "default: backend.require_at_start, else off"}},
       backends()});

  std::vector<Option> replay = limit_options("required");
  replay.push_back({"--backend URL",
                    "where counters live (URL below); on Redis, keys of this run's own",
                    "default: memory"});
  replay.push_back({"FILE",
                    "the trace: lines t_us,key[,cost] (cost 1 when absent; blank lines and # "
                    "comments skipped); \"-\" is standard input. A header line (t_us,key,…) is "
                    "skipped and columns after cost ignored, so replay's own output replays",
                    "default: standard input"});
  help.push_back(
      {"replay", "run a CSV trace through one limiter",
       "replay --algorithm NAME --limit L --period P [--burst B] [--max-delay D]\n"
       "                       [--backend URL] [FILE | -]",
       "Runs a trace through one limiter on the trace's own clock and prints a header, then one "
       "line per request: t_us, key, cost, allowed (1 or 0), remaining, retry_after_us "
       "and reset_after_us; with --max-delay also delay_us, the wait of a request admitted after "
       "one (0 for the others).",
       std::move(replay), durations() + "\n" + backends()});

  const PatternOptions pattern;
  std::vector<Option> simulate = {
      {"--trace FILE", "a trace as replay reads it; \"-\" is standard input",
       "required, or --pattern"},
      {"--pattern NAME", "generated traffic, one of " + joined(pattern_names()),
       "required, or --trace"},
      {"--rate R",
       "--pattern: requests offered per second, all keys together: a number or a rate (100, "
       "6000/min, 5/100ms)",
       "default: twice the limit per key, 2 × L/P × K per second (attack: L/P × K / 2, plus "
       "the attacker's 20 × L/P)"},
      {"--duration D", "--pattern: how long the traffic lasts, a DURATION",
       "default: " + format_duration(pattern.duration)},
      {"--keys K", "--pattern: how many keys the traffic spreads over, 1 to 1000000",
       "default: " + std::to_string(pattern.keys)},
      {"--seed S",
       "--pattern: the random seed, a whole number >= 0 (the same seed, the same "
       "traffic)",
       "default: " + std::to_string(pattern.seed)},
  };
  for (Option& option : limit_options("required")) {
    if (option.flag == "--algorithm NAME") continue;  // simulate compares them: --algorithms
    simulate.push_back(std::move(option));
  }
  simulate.push_back({"--algorithms LIST",
                      "the algorithms to compare, comma-separated, from " + algorithm_names(),
                      "default: all"});
  simulate.push_back({"--out FILE", "write the HTML report", "default: none"});
  simulate.push_back({"--csv FILE",
                      "write the series: bucket_start_s,bucket_s,algorithm,offered,admitted,denied"
                      " (and delayed, with --max-delay)",
                      "default: none"});
  simulate.push_back(
      {"--svg FILE", "write one SVG chart of what each algorithm admits", "default: none"});
  simulate.push_back({"--trace-out FILE", "--pattern: write the generated trace (replay reads it)",
                      "default: none"});
  help.push_back(
      {"simulate", "what each algorithm admits of the same traffic",
       "simulate (--trace FILE | --pattern NAME [--rate R] [--duration D] [--keys K]\n"
       "                         [--seed S]) --limit L --period P [--burst B] [--max-delay D]\n"
       "                         [--algorithms LIST] [--out FILE] [--csv FILE] [--svg FILE]\n"
       "                         [--trace-out FILE]",
       "Runs the same traffic through each algorithm and prints "
       "algorithm,offered,admitted,denied,max_admitted_in_any_period, one line per algorithm; "
       "with --max-delay (token_bucket and gcra, the default --algorithms then) also delayed, "
       "mean_delay_ms and max_delay_ms, and the periods are measured when requests proceed "
       "(their time plus their delay).",
       std::move(simulate),
       "FILE of --out, --csv, --svg, --trace-out: \"-\" is standard output (for one of them; the "
       "summary then goes to standard error); every file written is announced on standard "
       "error.\n" +
           durations()});

  std::vector<Option> bench = {
      {"--backend URL", "the backend to load (URL below)", "default: memory"}};
  for (Option& option : limit_options("default: gcra")) bench.push_back(std::move(option));
  const std::string key_prefix(kBenchKeyPrefix);
  bench.insert(
      bench.end(),
      {{"--concurrency N",
        "checks at once: threads on memory, checks in flight on Redis, connections with --http; "
        "1 to 1024",
        "default: 1 (--http: 64)"},
       {"--keys K", "how many keys the checks pick from at random, 1 to 100000000",
        "default: 1000"},
       {"--duration D", "how long to run, a DURATION", "default: 5s"},
       {"--requests N", "stop after N checks in all instead of after --duration, 1 to 2^40",
        "default: none"},
       {"--rate R",
        "open loop: offer R checks/s in all on a schedule (1 to 10^9); each latency counts from "
        "the check's scheduled time, so a stall shows in the checks queued behind it",
        "default: none (closed loop: checks back to back)"},
       {"--http URL",
        "instead of a backend, an HTTP server: POSTs of the seed policy's attributes (10,000 "
        "addresses, 1,000 API keys) to http://HOST[:PORT]/PATH on keep-alive connections "
        "(--concurrency of them); 2xx is admitted, 429 and 503 denied",
        "default: none"},
       {"--threads N", "--http: event loops the connections are spread over, 1 to 64",
        "default: 2"},
       {"--body JSON",
        "--http: POST these bytes in every request instead of the seed policy's stream, to load "
        "any policy (e.g. '{\"user\":\"u1\"}'); at most 64 KiB",
        "default: the stream"},
       {"--body-file FILE", "--http: the same, read from FILE", "default: none"},
       {"--batch N", "Redis: the most checks in one script call, 1 to 4096 (1: no batching)",
        "default: 128"},
       {"--in-flight N", "Redis: script calls in flight before checks wait to batch, 1 to 4096",
        "default: 2 (with --batch 1: --concurrency)"},
       {"--key-prefix P",
        "Redis: the keys' prefix, not empty; keeps bench apart from serve's keys (\"spillway\")",
        "default: " + key_prefix},
       {"--json",
        "print the report as one JSON object (the same names; latencies in us, first_error when "
        "a check failed); errors still go to stderr with exit 1",
        "default: name=value lines"}});
  help.push_back({"bench", "load a backend and measure it",
                  "bench [--backend URL] [--algorithm NAME] [--limit L] [--period P] [--burst B]\n"
                  "                      [--max-delay D]\n"
                  "                      [--concurrency N] [--keys K] [--duration D | --requests "
                  "N] [--rate R]\n"
                  "                      [--batch N] [--in-flight N] [--key-prefix P] [--json]\n"
                  "       spillway bench --http URL [--concurrency N] [--threads N]\n"
                  "                      [--duration D | --requests N] [--rate R]\n"
                  "                      [--body JSON | --body-file FILE] [--json]",
                  "Checks random keys against a backend and prints checks/s, errors/s, p50, p99, "
                  "p99.9 and max latency and the admitted, denied and error totals; exit 1 when a "
                  "check failed, naming the first error (with --http, its status and the start "
                  "of its body).",
                  std::move(bench), durations() + "\n" + backends()});

  help.push_back(
      {"validate",
       "check a config file or Envoy rate limit rules",
       "validate [--json] FILE | validate [--json] - | validate [--json] --rls PATH",
       "Checks a config as serve would before it starts (URLs, files, rules): every error, one "
       "line each, FILE: line N: path: what; prints FILE: ok (N layers) when there is none.",
       {{"FILE", "the YAML config; \"-\" is standard input", "required, or --rls"},
        {"--rls PATH", "check envoyproxy/ratelimit's rules instead: a YAML file or a directory",
         "default: none"},
        {"--json",
         "print one JSON object: {\"file\" (or \"rls\"), \"ok\", \"layers\" (or \"domains\"), "
         "\"errors\", \"warnings\"}; every line still goes to stderr, the exit status is the same",
         "default: text"}},
       ""});

  help.push_back(
      {"inspect",
       "show a request's keys and their state",
       "inspect [--config FILE] [--backend URL] [--json] NAME=VALUE... | inspect --admin URL "
       "--token-file FILE [--json] NAME=VALUE...",
       "For a request with these attributes (api_key=..., ip=..., endpoint=...), prints each layer "
       "that applies: its limit, its key, the name the backend stores it under (a digest unless "
       "backend.key_hash is none) and its state now, read with a check of cost 0 that changes "
       "nothing. The memory backend's state lives in the serving process: --admin asks a running "
       "serve (its policy, tenant records and store) through its admin API.",
       {{"NAME=VALUE", "one attribute of the request, as POST /v1/check takes it", "at least one"},
        {"--config FILE", "the YAML config serve runs with", "default: the built-in policy"},
        {"--backend URL", "replaces backend.url", "default: the config's"},
        {"--admin URL",
         "ask the server whose admin listener (server.admin_listen) this is, http://host:port, "
         "instead of reading the config and the backend here; not with --config or --backend",
         "default: none"},
        {"--token-file FILE", "with --admin: a file whose first token is sent as the bearer token",
         "required with --admin"},
        {"--json",
         "print one JSON object: backend, key_names, layers [{name, shadow, plan, limit, blocked, "
         "key, redis_key, now {remaining, limit, reset_after_us}}]; with --admin, the server's",
         "default: text"}},
       ""});

  help.push_back(
      {"tenants",
       "change tenant records through a server's admin API",
       "tenants set KEY [--plan P] [--limit LAYER=RATE,...] [--blocked] | get KEY | delete KEY | "
       "reset KEY --layer L | list [--plan P] [--all] [--json] | import FILE",
       "Talks to the admin API of a running spillway serve (server.admin_listen): gives a caller "
       "(an API key) a plan, its own rate for a layer, or blocks it; the change applies on every "
       "instance sharing the backend within a second. Prints the server's JSON answer. import "
       "reads NDJSON ({\"key\":\"k1\",\"plan\":\"pro\"} per line), or CSV (key,plan) when "
       "FILE ends in .csv; - is standard input.",
       {{"--admin URL", "the admin listener, http://host:port", "required"},
        {"--token-file FILE", "a file whose first token is sent as the bearer token", "required"},
        {"--plan P", "set: the plan; list: only records with this plan", "default: none"},
        {"--limit LAYER=RATE", "set: the caller's own rate for a layer (e.g. gateway=1200/min)",
         "default: none"},
        {"--blocked",
         "set: deny every request with this key, charging nothing: on POST /v1/check and GET "
         "/v1/auth; on Envoy's ShouldRateLimit and RLQS only when rls.tenant_key names the "
         "descriptor key that carries it",
         "default: off"},
        {"--layer L", "reset: the layer whose counters for KEY are forgotten", "required by reset"},
        {"--all", "list: every page, one JSON answer per line", "default: one page"},
        {"--json",
         "list --all: one JSON document instead, {\"tenants\": every page's, \"next_cursor\": "
         "null, \"total\"}",
         "default: off"},
        {"--page N", "list: records per page (1-1000)", "default: 100"},
        {"--cursor ID", "list: start after this id (a page's next_cursor)", "default: the first"}},
       ""});
  return help;
}

std::string render(const Help& help) {
  std::string out = "usage: spillway ";
  out.append(help.synopsis).append("\n\n");
  append_wrapped(out, help.about, 0, 0);
  out.append("\noptions:\n");
  for (const Option& option : help.options) {
    out.append("  ").append(option.flag);
    std::size_t column = 2 + option.flag.size();
    if (column + 1 < kIndent) {
      out.append(kIndent - column, ' ');
    } else {
      out.append("\n").append(kIndent, ' ');
    }
    std::string given = option.given;
    if (const std::size_t space = given.find(' ');
        given.starts_with("default: ") && given.find(' ', space + 1) == std::string::npos) {
      given[space] = kNoBreak;  // a one-word default stays beside "default:"
    }
    append_wrapped(out, option.about + "; " + given, kIndent, kIndent);
  }
  std::string_view notes = help.notes;
  if (!notes.empty()) out.push_back('\n');
  while (!notes.empty()) {
    const std::size_t newline = notes.find('\n');
    append_wrapped(out, notes.substr(0, newline), 0, 2);
    if (newline == std::string_view::npos) break;
    notes.remove_prefix(newline + 1);
  }
  return out;
}

}  // namespace

std::span<const std::string_view> command_names() { return kNames; }

std::string overview_help() {
  std::string out = "usage: spillway <command> [options]\ncommands:\n";
  for (const Help& help : all_help()) {
    out.append("  ").append(help.name).append(10 - help.name.size(), ' ').append(help.summary);
    out.push_back('\n');
  }
  out.append(
      "spillway help COMMAND (or spillway COMMAND --help): its options, their defaults and "
      "values\nspillway --version: the version\n"
      "\"--\" ends the options: every later argument is positional, even one starting with "
      "\"--\".\n");
  return out;
}

std::optional<std::string> command_help(std::string_view command) {
  for (const Help& help : all_help()) {
    if (help.name == command) return render(help);
  }
  return std::nullopt;
}

}  // namespace spillway::cli
