// parse_config: the document's sections, each read by its own file (config_sections.h), their
// errors gathered in file order; and the config file read from disk.
#include "src/config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/config/yaml_syntax.h"
#include "src/core/text.h"

namespace spillway::policy {

namespace {

Config parse_document(const YAML::Node& root) {
  Config config = default_config();
  if (root.IsNull()) return config;
  if (!root.IsMap()) {
    fail(root, "",
         "the config must be a mapping with server, backend and layers, not " +
             std::string(kind_of(root)));
  }
  Fields fields(root, "", {"server", "backend", "priority", "layers", "rls", "tenants"});
  if (const Entry* rls = fields.find("rls")) collect([&] { parse_rls(rls->value, config.rls); });
  if (const Entry* tenants = fields.find("tenants")) {
    collect([&] { parse_tenants(tenants->value, config.tenants); });
  }
  if (const Entry* server = fields.find("server")) {
    collect([&] { parse_server(server->value, config.server); });
  }
  if (const Entry* backend = fields.find("backend")) {
    collect([&] { parse_backend(backend->value, config.backend); });
  }
  std::optional<PrioritySpec> priority;
  if (const Entry* section = fields.find("priority")) {
    // A section with an error leaves no levels: the layers' reserves then say nothing more.
    if (!collect([&] { priority = parse_priority(section->value); })) priority = PrioritySpec{};
  }
  if (const Entry* layers = fields.find("layers")) {
    collect([&] { config.policy = parse_layers(layers->value, priority); });
  }
  config.policy.priority = std::move(priority);
  return config;
}

// The N of an error "line N: …" (0 when it has none).
int error_line(std::string_view error) {
  int line = 0;
  if (error.starts_with("line ")) {
    std::from_chars(error.data() + 5, error.data() + error.size(), line);
  }
  return line;
}

}  // namespace

Config default_config() {
  Config config;
  config.policy = seed_policy_spec();
  return config;
}

ConfigReport read_config(std::string_view yaml_text) {
  const EmptyValueKeys empty_value_keys;
  ReadLog log;  // every error of the file, each with its line
  ConfigReport report{.config = default_config(), .errors = {}};
  // Keys and the messages of parse_rate / parse_algorithm can hold control characters: escaped,
  // so that each error stays one line.
  const auto one_error = [&](const std::string& error) {
    report.errors = {escape_control(error, false)};
    return std::move(report);
  };
  try {
    // yaml-cpp 0.7's LoadAll never returns on some inputs (a top-level ","; found by the
    // robustness test), so the text is loaded with Load and a second document is found by its
    // separator line instead.
    const TextShape shape = text_shape(yaml_text);
    if (shape.second_document_line > 0) {
      return one_error("line " + std::to_string(shape.second_document_line) +
                       ": a config file holds one YAML document");
    }
    const YAML::Node document = YAML::Load(std::string(yaml_text));
    // yaml-cpp 0.7 takes a quote left open at the end as the rest of the text.
    if (std::string quote = unclosed_quote(yaml_text); !quote.empty()) return one_error(quote);
    if (document.IsNull()) {
      if (shape.first_content_line == 0) return report;  // empty or only comments
      return one_error("line " + std::to_string(shape.first_content_line) +
                       ": the config must be a mapping of server, backend and layers");
    }
    report.config = parse_document(document);
    for (auto& [path, line] : log.lines()) {
      report.config.lines.by_path.emplace(std::move(path), line);
    }
    // In the file's order: sections and fields are read in a fixed order, not the file's.
    std::vector<std::string> errors = log.errors();
    std::stable_sort(errors.begin(), errors.end(), [](const std::string& a, const std::string& b) {
      return error_line(a) < error_line(b);
    });
    for (const std::string& error : errors) {
      report.errors.push_back(escape_control(error, false));
    }
    return report;
  } catch (const ConfigError& error) {
    return one_error(error.message);
  } catch (const YAML::Exception& error) {
    // In words; yaml-cpp's messages can quote the offending character ("unknown escape
    // character: ").
    return one_error(describe_yaml_error(yaml_text, error.msg, line_of(error.mark)));
  } catch (const std::exception& error) {
    return one_error(std::string("line 1: ") + error.what());
  }
}

Result<Config> parse_config(std::string_view yaml_text) {
  ConfigReport report = read_config(yaml_text);
  if (report.errors.empty()) return std::move(report.config);
  std::string message;
  for (const std::string& error : report.errors) message += (message.empty() ? "" : "\n") + error;
  return invalid_argument(std::move(message));
}

Result<Config> load_config_file(const std::string& path) {
  Result<std::string> text = read_config_file(path);
  if (!text) return std::unexpected(text.error());
  Result<Config> config = parse_config(*text);
  if (config) resolve_config_paths(*config, path);
  return config;
}

Result<std::string> read_config_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument("cannot read config file " + quote_for_error(path) +
                            ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return invalid_argument("cannot read config file " + quote_for_error(path) + ": " +
                            std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return invalid_argument("cannot read config file " + quote_for_error(path));
  return text.str();
}

}  // namespace spillway::policy
