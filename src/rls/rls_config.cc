// Loading envoyproxy/ratelimit's YAML rules (see rls_config.h).
#include "src/rls/rls_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "spillway/algorithm.h"
#include "spillway/duration.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"

namespace spillway::rls {
namespace {

using policy::boolean;
using policy::ConfigError;
using policy::Entry;
using policy::fail;
using policy::Fields;

struct UnitInfo {
  Unit unit;
  std::string_view name;
  Micros length;
};
constexpr std::array<UnitInfo, 7> kUnits = {{
    {Unit::kSecond, "second", kMicrosPerSecond},
    {Unit::kMinute, "minute", kMicrosPerMinute},
    {Unit::kHour, "hour", kMicrosPerHour},
    {Unit::kDay, "day", kMicrosPerDay},
    {Unit::kWeek, "week", 7 * kMicrosPerDay},
    {Unit::kMonth, "month", 30 * kMicrosPerDay},
    {Unit::kYear, "year", 365 * kMicrosPerDay},
}};

std::string text_field(const Fields& fields, std::string_view name, std::string_view expected) {
  const Entry* entry = fields.find(name);
  return entry ? policy::scalar(entry->value, fields.path(name), expected) : std::string();
}

RuleLimit parse_rate_limit(const YAML::Node& node, const std::string& path) {
  policy::expect_map(node, path, "a mapping of unit and requests_per_unit");
  const Fields fields(node, path,
                      {"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm",
                       "burst", "period", "charge", "max_delay"});
  // Named so that the error says why rather than "unknown field".
  if (const Entry* delay = fields.find("max_delay")) {
    fail(delay->key, fields.path("max_delay"),
         "Envoy's rate limit service cannot delay a request: its answer is OK or OVER_LIMIT, "
         "and Envoy forwards an OK at once (put max_delay on a layer of the HTTP policy, "
         "served to nginx's auth_request)");
  }
  RuleLimit rule;
  rule.name = text_field(fields, "name", "a name");
  if (const Entry* replaces = fields.find("replaces")) {
    const std::string list_path = fields.path("replaces");
    if (!replaces->value.IsSequence()) {
      fail(replaces->value, list_path,
           "must be a list of {name: …}, not " + std::string(policy::kind_of(replaces->value)));
    }
    for (std::size_t i = 0; i < replaces->value.size(); ++i) {
      const YAML::Node item = replaces->value[i];
      const std::string item_path = list_path + "[" + std::to_string(i) + "]";
      policy::expect_map(item, item_path, "a mapping with a name");
      const Fields item_fields(item, item_path, {"name"});
      const Entry& name = item_fields.require("name");
      std::string replaced = policy::scalar(name.value, item_fields.path("name"), "a rule's name");
      if (replaced.empty()) fail(name.value, item_fields.path("name"), "must not be empty");
      rule.replaces.push_back(std::move(replaced));
    }
  }
  if (const Entry* unlimited = fields.find("unlimited")) {
    rule.unlimited = boolean(unlimited->value, fields.path("unlimited"));
  }
  if (const Entry* charge = fields.find("charge")) {
    const std::string text = policy::scalar(charge->value, fields.path("charge"), "a charge mode");
    if (text == "after_response") {
      rule.charge_after_response = true;
    } else if (text != "on_request") {
      fail(charge->value, fields.path("charge"),
           "unknown charge " + quote_for_error(text) + " (expected on_request or after_response)");
    }
  }
  if (rule.unlimited) {
    for (const char* name :
         {"unit", "requests_per_unit", "period", "algorithm", "burst", "charge"}) {
      if (const Entry* entry = fields.find(name)) {
        fail(entry->key, fields.path(name), "must not be given with unlimited: true");
      }
    }
    return rule;
  }
  const Entry* unit = fields.find("unit");
  const Entry* period = fields.find("period");
  if (unit && period) fail(period->key, fields.path("period"), "give unit or period, not both");
  if (!unit && !period) {
    fail(node, path, "needs a unit (second, minute, hour, day, week, month, year) or a period");
  }
  Micros length = 0;
  if (unit) {
    const std::string text = policy::scalar(unit->value, fields.path("unit"), "a unit");
    const std::string name = ascii_lowered(text);
    const auto it = std::find_if(kUnits.begin(), kUnits.end(),
                                 [&](const UnitInfo& u) { return u.name == name; });
    if (it == kUnits.end()) {
      fail(unit->value, fields.path("unit"),
           "unknown unit " + quote_for_error(text) +
               " (expected second, minute, hour, day, week, month or year)");
    }
    rule.unit = it->unit;
    length = it->length;
  } else {
    const std::string text = policy::scalar(period->value, fields.path("period"), "a duration");
    Result<Micros> parsed = parse_duration(text);
    if (!parsed) fail(period->value, fields.path("period"), parsed.error().message);
    length = *parsed;
    rule.unit = unit_of_period(length);
  }
  const Entry& requests = fields.require("requests_per_unit");
  rule.requests_per_unit = static_cast<std::uint32_t>(
      policy::whole_number(requests.value, fields.path("requests_per_unit"), 0,
                           std::numeric_limits<std::uint32_t>::max()));
  Algorithm algorithm = Algorithm::kFixedWindow;
  if (const Entry* entry = fields.find("algorithm")) {
    const std::string name =
        policy::scalar(entry->value, fields.path("algorithm"), "an algorithm's name");
    if (name == "concurrency") {
      fail(entry->value, fields.path("algorithm"),
           "a concurrency limit cannot be an Envoy rule: Envoy's rate limit service has no "
           "release step, so every slot would stay held until its hold expired (a negative "
           "hits_addend on stream done is a charge, not a release); put it in layers: and "
           "release through POST /v1/release");
    }
    Result<Algorithm> parsed = parse_algorithm(name);
    if (!parsed) fail(entry->value, fields.path("algorithm"), parsed.error().message);
    algorithm = *parsed;
  }
  std::optional<std::int64_t> burst;
  if (const Entry* entry = fields.find("burst")) {
    burst = policy::whole_number(entry->value, fields.path("burst"), 1, kMaxExact);
  }
  if (rule.requests_per_unit == 0) {
    if (burst) fail(fields.find("burst")->key, fields.path("burst"), "needs requests_per_unit > 0");
    if (rule.charge_after_response) {
      fail(fields.find("charge")->key, fields.path("charge"), "needs requests_per_unit > 0");
    }
    return rule;  // every request over the limit, as envoyproxy/ratelimit
  }
  Result<Limit> limit = Limit::make(algorithm, rule.requests_per_unit, length, burst);
  if (!limit) {
    const Entry* burst_entry = fields.find("burst");
    if (burst_entry && limit.error().message.find("burst") != std::string::npos) {
      fail(burst_entry->value, fields.path("burst"), limit.error().message);
    }
    fail(node, path, limit.error().message);
  }
  rule.limit = *limit;
  return rule;
}

std::vector<DescriptorRule> parse_descriptors(const YAML::Node& node, const std::string& path);

DescriptorRule parse_descriptor(const YAML::Node& node, const std::string& path) {
  policy::expect_map(node, path, "a mapping with a key");
  const Fields fields(
      node, path, {"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric"});
  DescriptorRule rule;
  const Entry& key = fields.require("key");
  rule.key = policy::scalar(key.value, fields.path("key"), "a descriptor key");
  if (rule.key.empty()) fail(key.value, fields.path("key"), "must not be empty");
  rule.value = text_field(fields, "value", "a value");
  rule.stat_name = rule.value.empty() ? rule.key : rule.key + "_" + rule.value;
  if (rule.value.ends_with('*')) {
    rule.wildcard = true;
    rule.value.pop_back();
  }
  if (const Entry* limit = fields.find("rate_limit")) {
    rule.rate_limit = parse_rate_limit(limit->value, fields.path("rate_limit"));
  }
  if (const Entry* shadow = fields.find("shadow_mode")) {
    rule.shadow_mode = boolean(shadow->value, fields.path("shadow_mode"));
  }
  if (const Entry* detailed = fields.find("detailed_metric")) {
    rule.detailed_metric = boolean(detailed->value, fields.path("detailed_metric"));
  }
  if (const Entry* children = fields.find("descriptors")) {
    rule.descriptors = parse_descriptors(children->value, fields.path("descriptors"));
  }
  return rule;
}

std::vector<DescriptorRule> parse_descriptors(const YAML::Node& node, const std::string& path) {
  std::vector<DescriptorRule> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) {
    fail(node, path, "must be a list of descriptors, not " + std::string(policy::kind_of(node)));
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    DescriptorRule rule = parse_descriptor(node[i], item_path);
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].key == rule.key && out[j].value == rule.value &&
          out[j].wildcard == rule.wildcard) {
        fail(node[i], item_path,
             "duplicate descriptor (key " + quote_for_error(rule.key) + ", value " +
                 quote_for_error(rule.wildcard ? rule.value + "*" : rule.value) + "), also " +
                 path + "[" + std::to_string(j) + "]");
      }
    }
    out.push_back(std::move(rule));
  }
  return out;
}

Result<std::string> read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return std::unexpected(
        Error{Errc::kInvalidArgument,
              "cannot read " + quote_for_error(file.string()) + ": " + std::strerror(errno)});
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return std::unexpected(
        Error{Errc::kInvalidArgument, "cannot read " + quote_for_error(file.string())});
  }
  return text.str();
}

// The files a path names: itself, or the rule files of a directory in name order.
Result<std::vector<std::filesystem::path>> rule_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) {
      return std::unexpected(
          Error{Errc::kInvalidArgument, "cannot read " + quote_for_error(path) + ": no such file"});
    }
    return std::vector<fs::path>{path};
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& file = it->path();
    const std::string name = file.filename().string();
    const std::string extension = file.extension().string();
    if (name.starts_with('.') || (extension != ".yaml" && extension != ".yml")) continue;
    std::error_code type_ec;
    if (fs::is_regular_file(file, type_ec)) files.push_back(file);  // follows symlinks
  }
  if (ec) {
    return std::unexpected(Error{Errc::kInvalidArgument,
                                 "cannot list " + quote_for_error(path) + ": " + ec.message()});
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Micros unit_length(Unit unit) {
  for (const UnitInfo& info : kUnits) {
    if (info.unit == unit) return info.length;
  }
  return 0;
}

std::string_view unit_name(Unit unit) {
  for (const UnitInfo& info : kUnits) {
    if (info.unit == unit) return info.name;
  }
  return "unknown";
}

Unit unit_of_period(Micros period) {
  for (const UnitInfo& info : kUnits) {
    if (info.length == period) return info.unit;
  }
  return Unit::kUnknown;
}

Result<DomainRules> parse_rls_yaml(std::string_view yaml_text, std::string source) {
  const policy::EmptyValueKeys empty_value_keys;
  try {
    const policy::TextShape shape = policy::text_shape(yaml_text);
    if (shape.second_document_line > 0) {
      return std::unexpected(
          Error{Errc::kInvalidArgument, "line " + std::to_string(shape.second_document_line) +
                                            ": a rules file holds one YAML document"});
    }
    const YAML::Node document = YAML::Load(std::string(yaml_text));
    if (!document.IsMap()) {
      return std::unexpected(
          Error{Errc::kInvalidArgument,
                "line " + std::to_string(std::max(shape.first_content_line, 1)) +
                    ": a rules file must be a mapping with a domain and descriptors"});
    }
    const Fields fields(document, "", {"domain", "descriptors"});
    DomainRules rules;
    rules.source = std::move(source);
    const Entry& domain = fields.require("domain");
    rules.domain = policy::scalar(domain.value, "domain", "the domain's name");
    if (rules.domain.empty()) fail(domain.value, "domain", "must not be empty");
    if (const Entry* descriptors = fields.find("descriptors")) {
      rules.descriptors = parse_descriptors(descriptors->value, "descriptors");
    }
    return rules;
  } catch (const ConfigError& error) {
    return std::unexpected(Error{Errc::kInvalidArgument, escape_control(error.message, false)});
  } catch (const YAML::Exception& error) {
    return std::unexpected(
        Error{Errc::kInvalidArgument, "line " + std::to_string(policy::line_of(error.mark)) + ": " +
                                          escape_control(error.msg, false)});
  } catch (const std::exception& error) {
    return std::unexpected(
        Error{Errc::kInvalidArgument, "line 1: " + escape_control(error.what(), false)});
  }
}

Result<RlsRules> load_rls_rules(const std::string& path) {
  auto files = rule_files(path);
  if (!files) return std::unexpected(files.error());
  RlsRules rules;
  for (const std::filesystem::path& file : *files) {
    const std::string name = file.string();
    Result<std::string> text = read_file(file);
    if (!text) return std::unexpected(text.error());
    Result<DomainRules> domain = parse_rls_yaml(*text, name);
    if (!domain) {
      return std::unexpected(Error{Errc::kInvalidArgument, name + ": " + domain.error().message});
    }
    if (auto it = rules.domains.find(domain->domain); it != rules.domains.end()) {
      return std::unexpected(
          Error{Errc::kInvalidArgument, name + ": domain " + quote_for_error(domain->domain) +
                                            " is already defined in " + it->second.source});
    }
    std::string key = domain->domain;
    rules.domains.emplace(std::move(key), std::move(*domain));
    rules.files.push_back(name);
  }
  return rules;
}

std::string rls_rules_fingerprint(const std::string& path) {
  auto files = rule_files(path);
  if (!files) return {};
  std::string out;
  for (const std::filesystem::path& file : *files) {
    Result<std::string> text = read_file(file);
    out += file.string();
    out += '\0';
    out += std::to_string(text ? text->size() : 0);
    out += '\0';
    if (text) out += *text;
  }
  return out;
}

}  // namespace spillway::rls
