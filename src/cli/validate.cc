#include "src/cli/validate.h"

#include <ostream>
#include <string>

#include "src/cli/args.h"
#include "src/policy/config.h"

namespace spillway::cli {

int run_validate(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  Result<Args> args = Args::parse(argc, argv, first, {});
  if (!args) {
    err << "spillway validate: " << args.error().message << "\n";
    return 2;
  }
  const std::vector<std::string>& files = args->positional();
  if (files.size() != 1) {
    err << "spillway validate: expected one FILE argument, got " << files.size() << "\n";
    return 2;
  }
  const std::string& file = files.front();
  Result<policy::Config> config = policy::load_config_file(file);
  if (!config) {
    err << "spillway validate: " << file << ": " << config.error().message << "\n";
    return 1;
  }
  const std::size_t layers = config->policy.layers.size();
  out << file << ": ok (" << layers << (layers == 1 ? " layer)" : " layers)") << "\n";
  return 0;
}

}  // namespace spillway::cli
