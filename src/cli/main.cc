// spillway: the command line (SPEC §4).
#include <iostream>
#include <string_view>

#include "src/cli/bench.h"
#include "src/cli/replay.h"
#include "src/cli/serve.h"
#include "src/cli/validate.h"

namespace {

constexpr std::string_view kUsage =
    "usage: spillway <command> [options]\n"
    "commands:\n"
    "  serve [--config FILE] [--listen HOST:PORT] [--backend URL]\n"
    "      the HTTP server (default: 127.0.0.1:8080, memory backend, the seed policy)\n"
    "  replay --algorithm NAME --limit L --period P [--burst B] [--backend URL] [FILE]\n"
    "      run a CSV trace (t_us,key[,cost]) through one limiter; one decision per line\n"
    "  bench [--backend URL] [--algorithm NAME] [--limit L] [--period P] [--burst B]\n"
    "        [--concurrency N] [--keys K] [--duration D | --requests N] [--batch N]\n"
    "        [--in-flight N]\n"
    "      load a backend; prints checks/s, p50/p99 latency, admitted/denied/error totals\n"
    "  validate FILE\n"
    "      check a config file; errors name the line and the field\n"
    "backends: memory (default), redis://[user:password@]host:port[/db], unix:///path\n";

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    std::cerr << "spillway: missing command\n" << kUsage;
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "replay")
    return spillway::cli::run_replay(argc, argv, 2, std::cin, std::cout, std::cerr);
  if (command == "validate") {
    return spillway::cli::run_validate(argc, argv, 2, std::cout, std::cerr);
  }
  if (command == "serve") return spillway::cli::run_serve(argc, argv, 2, std::cerr);
  if (command == "bench") return spillway::cli::run_bench(argc, argv, 2, std::cout, std::cerr);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "spillway: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
