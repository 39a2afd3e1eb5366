// spillway: the command line (docs/SPEC.md §4). `spillway <command> --help` prints the command's
// usage; `spillway --version` prints the version.
#include <iostream>
#include <span>
#include <string_view>

#include "src/cli/bench.h"
#include "src/cli/replay.h"
#include "src/cli/serve.h"
#include "src/cli/simulate.h"
#include "src/cli/validate.h"

namespace {

struct Command {
  std::string_view name;
  std::string_view usage;  // the synopsis line(s), then what it does
  int (*run)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"serve",
     "serve [--config FILE] [--listen HOST:PORT] [--backend URL]\n"
     "        [--grpc-listen HOST:PORT --rls-config PATH]\n"
     "      the HTTP server (default: 127.0.0.1:8080, memory backend, the seed policy); with\n"
     "      --grpc-listen also Envoy's rate limit service (gRPC) on envoyproxy/ratelimit's rules\n",
     [](int argc, char** argv) { return spillway::cli::run_serve(argc, argv, 2, std::cerr); }},
    {"replay",
     "replay --algorithm NAME --limit L --period P [--burst B] [--backend URL] [FILE]\n"
     "      run a CSV trace (t_us,key[,cost]) through one limiter; one decision per line\n",
     [](int argc, char** argv) {
       return spillway::cli::run_replay(argc, argv, 2, std::cin, std::cout, std::cerr);
     }},
    {"simulate",
     "simulate (--trace FILE | --pattern NAME [--rate R] [--duration D] [--keys K] [--seed S])\n"
     "        --limit L --period P [--burst B] [--algorithms a,b,...] [--out report.html]\n"
     "        [--csv FILE] [--svg FILE] [--trace-out FILE]\n"
     "      what each algorithm admits of the same traffic; patterns: steady, burst, ramp,\n"
     "      diurnal, attack, many-tenants; prints algorithm,offered,admitted,denied,\n"
     "      max_admitted_in_any_period\n",
     [](int argc, char** argv) {
       return spillway::cli::run_simulate(argc, argv, 2, std::cout, std::cerr);
     }},
    {"bench",
     "bench [--backend URL] [--algorithm NAME] [--limit L] [--period P] [--burst B]\n"
     "        [--concurrency N] [--keys K] [--duration D | --requests N] [--batch N]\n"
     "        [--in-flight N]\n"
     "      load a backend; prints checks/s, p50/p99 latency, admitted/denied/error totals\n",
     [](int argc, char** argv) {
       return spillway::cli::run_bench(argc, argv, 2, std::cout, std::cerr);
     }},
    {"validate",
     "validate FILE | validate --rls PATH\n"
     "      check a config file, or Envoy rate limit rules (a file or a directory); errors name\n"
     "      the line and the field\n",
     [](int argc, char** argv) {
       return spillway::cli::run_validate(argc, argv, 2, std::cout, std::cerr);
     }},
};

constexpr std::string_view kBackends =
    "backends: memory (default), redis://[user:password@]host:port[/db], unix:///path,\n"
    "          rediss://host:port[/db]?tls_ca_file=…&tls_cert_file=…&tls_key_file=…"
    "&tls_server_name=…,\n"
    "          redis+cluster://host:port,host:port…, rediss+cluster://…,\n"
    "          redis+sentinel://host:port,host:port…/MASTER_NAME[/db]\n";

void print_usage(std::ostream& out) {
  out << "usage: spillway <command> [options]   (spillway <command> --help, spillway --version)\n"
      << "commands:\n";
  for (const Command& c : kCommands) out << "  " << c.usage;
  out << kBackends;
}

bool asks_for_help(std::span<char*> args) {
  for (std::string_view arg : args) {
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    std::cerr << "spillway: missing command\n";
    print_usage(std::cerr);
    return 2;
  }
  const std::string_view command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    print_usage(std::cout);
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::cout << "spillway " << SPILLWAY_VERSION << "\n";
    return 0;
  }
  for (const Command& c : kCommands) {
    if (command != c.name) continue;
    if (asks_for_help(std::span<char*>(argv + 2, argv + argc))) {
      std::cout << "usage: spillway " << c.usage << kBackends;
      return 0;
    }
    return c.run(argc, argv);
  }
  std::cerr << "spillway: unknown command \"" << command << "\"\n";
  print_usage(std::cerr);
  return 2;
}
