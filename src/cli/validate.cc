#include "src/cli/validate.h"

#include <ostream>
#include <string>

#include "src/cli/args.h"
#include "src/policy/config.h"
#include "src/rls/rls_config.h"

namespace spillway::cli {

int run_validate(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  Result<Args> args = Args::parse(argc, argv, first, {"rls"});
  if (!args) {
    err << "spillway validate: " << args.error().message << "\n";
    return 2;
  }
  const std::vector<std::string>& files = args->positional();
  if (const std::optional<std::string> rules_path = args->get("rls")) {
    // Envoy's rules (envoyproxy/ratelimit's YAML): a file or a directory, as serve loads them.
    if (!files.empty()) {
      err << "spillway validate: --rls takes the rules' path; unexpected argument \""
          << files.front() << "\"\n";
      return 2;
    }
    Result<rls::RlsRules> rules = rls::load_rls_rules(*rules_path);
    if (!rules) {
      err << "spillway validate: " << rules.error().message << "\n";
      return 1;
    }
    out << *rules_path << ": ok (" << rules->domains.size()
        << (rules->domains.size() == 1 ? " domain" : " domains");
    const char* separator = ": ";
    for (const auto& [name, domain] : rules->domains) {
      out << separator << name;
      separator = ", ";
    }
    out << ")\n";
    return 0;
  }
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
