#include "src/cli/validate.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/preflight.h"
#include "src/config/config.h"
#include "src/core/json_writer.h"
#include "src/core/text.h"
#include "src/rls/rls_config.h"
#include "src/server/service.h"

namespace spillway::cli {
namespace {

// The N of "line N: …"; 0 when the error names no line.
int line_of(std::string_view error) {
  int line = 0;
  if (error.starts_with("line "))
    std::from_chars(error.data() + 5, error.data() + error.size(), line);
  return line;
}

// "line N: " for the line of `path` in the config, empty when it has none.
std::string line_prefix(const policy::Config& config, const std::string& path) {
  const int line = config.lines.of(path);
  return line > 0 ? "line " + std::to_string(line) + ": " : std::string();
}

// Attributes an enforced layer needs that GET /v1/auth never provides: every /v1/auth request
// would be a 400 (POST /v1/check can still send them). "line N: path: what".
std::vector<std::string> auth_warnings(const policy::Config& config) {
  std::vector<std::string> warnings;
  const auto provided = [](const std::string& name) {
    return std::find(std::begin(server::kAuthAttributes), std::end(server::kAuthAttributes),
                     name) != std::end(server::kAuthAttributes);
  };
  const auto warn = [&](const std::string& path, const std::string& attribute,
                        const std::string& layer, std::string_view consequence) {
    warnings.push_back(
        line_prefix(config, path) + path + ": layer " + layer + " reads attribute \"" + attribute +
        "\", which GET /v1/auth does not provide (it provides " + server::auth_attributes_text() +
        "): " + std::string(consequence) + "; POST /v1/check can send it");
  };
  constexpr std::string_view kRefused = "every /v1/auth request would be a 400";
  constexpr std::string_view kSkipped = "on /v1/auth its routes never match";
  const std::vector<policy::LayerSpec>& layers = config.policy.layers;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const policy::LayerSpec& layer = layers[i];
    if (layer.mode == policy::LayerMode::kShadow) continue;  // a shadow layer never refuses
    const std::string path = "layers[" + std::to_string(i) + "]";
    for (const std::string& attribute : layer.key) {
      const bool route = layer.by_endpoint && layer.by_endpoint->attribute == attribute;
      if (!route && !provided(attribute)) warn(path + ".key", attribute, layer.name, kRefused);
    }
    if (!layer.cost.empty() && !provided(layer.cost)) {
      warn(path + ".cost", layer.cost, layer.name, kRefused);
    }
    if (layer.by_plan && !provided(layer.by_plan->attribute)) {
      warn(path + ".by_plan.attribute", layer.by_plan->attribute, layer.name, kRefused);
    }
    if (layer.by_endpoint && !provided(layer.by_endpoint->attribute)) {
      warn(path + ".by_endpoint.attribute", layer.by_endpoint->attribute, layer.name, kSkipped);
    }
    if (layer.by_endpoint && std::find(layer.key.begin(), layer.key.end(),
                                       layer.by_endpoint->attribute) == layer.key.end()) {
      warnings.push_back(line_prefix(config, path + ".key") + path + ".key: layer " + layer.name +
                         " limits routes but its key has no " + layer.by_endpoint->attribute +
                         ": every route shares one counter per caller, each with its own limit "
                         "(add " +
                         layer.by_endpoint->attribute + " to key)");
    }
    if (layer.is_concurrency()) {
      warnings.push_back(line_prefix(config, path + ".algorithm") + path + ".algorithm: layer " +
                         layer.name +
                         " is a concurrency limit: GET /v1/auth refuses (500) every request it "
                         "applies to, since nginx's auth_request has no release step; call POST "
                         "/v1/check and POST /v1/release from the application");
    }
    if (layer.max_delay > 0 && config.server.max_delayed == 0) {
      warnings.push_back(line_prefix(config, path + ".max_delay") + path + ".max_delay: layer " +
                         layer.name +
                         " delays, but server.max_delayed is 0: every /v1/auth request it admits "
                         "after a delay is refused (403) and stays charged; POST /v1/check "
                         "answers delay_ms");
    }
  }
  return warnings;
}

// --json: {"file"|"rls": PATH, "ok": bool, "layers": N (a config that loaded), "domains": [...]
// (rules), "errors": [...], "warnings": [...]}; each message as the text output words it.
std::string json_result(std::string_view what, const std::string& path, bool ok,
                        const std::vector<std::pair<std::string, std::vector<std::string>>>& lists,
                        const std::vector<std::string>& errors,
                        const std::vector<std::string>& warnings, int layers = -1) {
  std::string out;
  JsonWriter json(out);
  const auto array = [&json](std::string_view name, const std::vector<std::string>& items) {
    json.runtime_key(name).begin_array();
    for (const std::string& item : items) json.value(utf8_or_escaped(item));
    json.end_array();
  };
  json.begin_object().runtime_key(what).value(utf8_or_escaped(path)).member("ok", ok);
  if (layers >= 0) json.member("layers", layers);
  for (const auto& [name, items] : lists) array(name, items);
  array("errors", errors);
  array("warnings", warnings);
  json.end_object();
  return out;
}

}  // namespace

int run_validate(int argc, char** argv, int first, std::istream& in, std::ostream& out,
                 std::ostream& err) {
  Result<Args> args = Args::parse(argc, argv, first, {"rls", "json"}, {"json"});
  if (!args) {
    err << "spillway validate: " << args.error().message << "\n";
    return 2;
  }
  const std::vector<std::string>& files = args->positional();
  const bool json = args->has("json");
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
      if (json)
        out << json_result("rls", *rules_path, false, {}, {rules.error().message}, {}) << "\n";
      return 1;
    }
    if (json) {
      std::vector<std::string> names;
      for (const auto& [name, domain] : rules->domains) names.push_back(name);
      out << json_result("rls", *rules_path, true, {{"domains", names}}, {}, {}) << "\n";
      return 0;
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
  // "-": the config on standard input, named "-" in messages as in the command.
  Result<std::string> text = file == "-" ? std::string(std::istreambuf_iterator<char>(in),
                                                       std::istreambuf_iterator<char>())
                                         : policy::read_config_file(file);
  if (!text) {
    err << "spillway validate: " << file << ": " << text.error().message << "\n";
    if (json) out << json_result("file", file, false, {}, {text.error().message}, {}) << "\n";
    return 1;
  }
  policy::ConfigReport report = policy::read_config(*text);
  if (file != "-") policy::resolve_config_paths(report.config, file);
  // Also what serve would stop on before binding or connecting (URLs, files, rules), in the
  // fields that were read without error: every mistake at once, in the file's order.
  const bool syntax_ok = report.errors.empty() || !report.config.lines.by_path.empty();
  const Preflight checked = syntax_ok ? preflight(report.config, file) : Preflight{};
  std::vector<std::pair<int, std::string>> errors;  // (line, "line N: path: what")
  for (const std::string& error : report.errors) errors.emplace_back(line_of(error), error);
  for (const std::string& error : checked.errors) {
    std::string located = error.substr(file.size() + 2);  // preflight starts with "FILE: "
    errors.emplace_back(line_of(located), std::move(located));
  }
  std::stable_sort(errors.begin(), errors.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [line, error] : errors) {
    err << "spillway validate: " << file << ": " << error << "\n";
  }
  if (!errors.empty()) {
    if (json) {
      std::vector<std::string> messages;
      for (const auto& [line, error] : errors) messages.push_back(error);
      out << json_result("file", file, false, {}, messages, {}) << "\n";
    }
    return 1;
  }
  std::vector<std::string> warnings = auth_warnings(report.config);
  for (const std::string& warning : checked.warnings) {  // "FILE: line N: path: what"
    warnings.push_back(warning.substr(file.size() + 2));
  }
  if (const std::optional<std::string> warning = rls_tenants_warning(report.config)) {
    warnings.push_back(line_prefix(report.config, "server.grpc_listen") + *warning);
  }
  for (const std::string& warning : warnings) {
    err << "spillway validate: " << file << ": warning: " << warning << "\n";
  }
  const std::size_t layers = report.config.policy.layers.size();
  if (json) {
    out << json_result("file", file, true, {}, {}, warnings, static_cast<int>(layers)) << "\n";
    return 0;
  }
  out << file << ": ok (" << layers << (layers == 1 ? " layer)" : " layers)") << "\n";
  return 0;
}

}  // namespace spillway::cli
