// spillway: the command line (docs/SPEC.md §4). `spillway <command> --help` and `spillway help
// <command>` print the command's help (src/cli/usage.h); `spillway --version` prints the version.
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "src/cli/bench.h"
#include "src/cli/inspect.h"
#include "src/cli/nearest.h"
#include "src/cli/replay.h"
#include "src/cli/serve.h"
#include "src/cli/simulate.h"
#include "src/cli/tenants.h"
#include "src/cli/usage.h"
#include "src/cli/validate.h"

namespace {

struct Command {
  std::string_view name;  // its help is spillway::cli::command_help(name)
  int (*run)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"serve",
     [](int argc, char** argv) { return spillway::cli::run_serve(argc, argv, 2, std::cerr); }},
    {"replay",
     [](int argc, char** argv) {
       return spillway::cli::run_replay(argc, argv, 2, std::cin, std::cout, std::cerr);
     }},
    {"simulate",
     [](int argc, char** argv) {
       return spillway::cli::run_simulate(argc, argv, 2, std::cin, std::cout, std::cerr);
     }},
    {"bench",
     [](int argc, char** argv) {
       return spillway::cli::run_bench(argc, argv, 2, std::cout, std::cerr);
     }},
    {"validate",
     [](int argc, char** argv) {
       return spillway::cli::run_validate(argc, argv, 2, std::cin, std::cout, std::cerr);
     }},
    {"inspect",
     [](int argc, char** argv) {
       return spillway::cli::run_inspect(argc, argv, 2, std::cout, std::cerr);
     }},
    {"tenants",
     [](int argc, char** argv) {
       return spillway::cli::run_tenants(argc, argv, 2, std::cin, std::cout, std::cerr);
     }},
};

bool asks_for_help(std::span<char*> args) {
  for (std::string_view arg : args) {
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

int unknown_command(std::string_view command) {
  std::cerr << "spillway: unknown command \"" << command << "\""
            << spillway::cli::did_you_mean(command, spillway::cli::command_names()) << "\n"
            << spillway::cli::overview_help();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    std::cerr << "spillway: missing command\n" << spillway::cli::overview_help();
    return 2;
  }
  const std::string_view command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    // `spillway help CMD` is `spillway CMD --help`.
    if (argc > 3) {
      std::cerr << "spillway help: one command at most, got \"" << argv[3] << "\" too\n";
      return 2;
    }
    if (argc == 3) {
      const std::optional<std::string> help = spillway::cli::command_help(argv[2]);
      if (!help) return unknown_command(argv[2]);
      std::cout << *help;
      return 0;
    }
    std::cout << spillway::cli::overview_help();
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::cout << "spillway " << SPILLWAY_VERSION << "\n";
    return 0;
  }
  for (const Command& c : kCommands) {
    if (command != c.name) continue;
    if (asks_for_help(std::span<char*>(argv + 2, argv + argc))) {
      std::cout << spillway::cli::command_help(c.name).value_or("");
      return 0;
    }
    return c.run(argc, argv);
  }
  return unknown_command(command);
}
