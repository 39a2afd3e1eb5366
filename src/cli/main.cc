// spillway: the command line (SPEC §4).
#include <iostream>
#include <string_view>

#include "src/cli/bench.h"
#include "src/cli/replay.h"

namespace {

constexpr std::string_view kUsage =
    "usage: spillway <command> [options]\n"
    "commands:\n"
    "  replay --algorithm NAME --limit L --period P [--burst B] [--backend URL] [FILE]\n"
    "      run a CSV trace (t_us,key[,cost]) through one limiter; one decision per line\n";

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
  if (command == "bench") return spillway::cli::run_bench(argc, argv, 2, std::cout, std::cerr);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "spillway: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
