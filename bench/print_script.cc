// Prints a script exactly as spillway sends it to Redis, for bench/script_cpu.sh:
//   print_script <algorithm>        the single-algorithm script (lua/prelude.lua + lua/batch.lua
//                                   with the algorithm's block)
//   print_script all_or_nothing     the all-or-nothing script
#include <cstdio>
#include <string_view>

#include "spillway/algorithm.h"
#include "src/redis/scripts.h"

int main(int argc, char** argv) {
  using namespace spillway;
  const std::string_view name = argc == 2 ? argv[1] : "";
  std::string_view text;
  if (name == "all_or_nothing") {
    text = redis::all_or_nothing_script_source();
  } else if (auto algorithm = parse_algorithm(name)) {
    text = redis::script_source(*algorithm);
  } else {
    std::fprintf(stderr, "usage: print_script <algorithm>|all_or_nothing\n");
    return 2;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
