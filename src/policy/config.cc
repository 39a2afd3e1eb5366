#include "src/policy/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "src/policy/names.h"

namespace spillway::policy {
namespace {

// Thrown inside this file only; parse_config turns it into an Error.
struct ConfigError {
  std::string message;
};

// Control characters as \xNN (and, with `quotes`, '"' and '\\' escaped), so a message stays
// one line.
std::string escaped(std::string_view text, bool quotes) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (quotes && (c == '"' || c == '\\')) {
      out.append(1, '\\').append(1, ch);
    } else if (c < 0x20 || c == 0x7f) {
      out.append("\\x").append(1, kHex[c >> 4]).append(1, kHex[c & 0xf]);
    } else {
      out.append(1, ch);
    }
  }
  return out;
}

// A value as it appears in an error: in double quotes, escaped so the message stays one line.
std::string in_quotes(std::string_view text) { return "\"" + escaped(text, true) + "\""; }

int line_of(const YAML::Mark& mark) { return mark.line < 0 ? 1 : mark.line + 1; }

// yaml-cpp marks an empty value ("listen:") where the next token starts, often a later line, so
// parse_config records the key of each empty value and errors about it point at that key.
thread_local std::vector<std::pair<YAML::Node, YAML::Mark>>* t_empty_values = nullptr;

YAML::Mark mark_of(const YAML::Node& node) {
  if (node.IsNull() && t_empty_values != nullptr) {
    for (const auto& [value, key_mark] : *t_empty_values) {
      if (value.is(node)) return key_mark;
    }
  }
  return node.Mark();
}

// "line N: path: what" (or "line N: what" at the top level).
[[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& what) {
  std::string message = "line " + std::to_string(line_of(mark_of(at))) + ": ";
  if (!path.empty()) message += path + ": ";
  throw ConfigError{message + what};
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string child_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

// Names of layers, attributes and plans.
const char* kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
      return "empty";
    default:
      return "a single value";
  }
}

// The text of a single value; `expected` says what belongs there ("a rate such as 60/min").
std::string scalar(const YAML::Node& node, const std::string& path, std::string_view expected) {
  if (!node.IsScalar()) {
    fail(node, path, "must be " + std::string(expected) + ", not " + kind_of(node));
  }
  return node.Scalar();
}

std::int64_t whole_number(const YAML::Node& node, const std::string& path, std::int64_t min,
                          std::int64_t max) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " +
                            (max == std::numeric_limits<std::int64_t>::max() ? std::string("2^63-1")
                                                                             : std::to_string(max));
  const std::string text = scalar(node, path, range);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < min ||
      value > max) {
    fail(node, path, in_quotes(text) + " must be " + range);
  }
  return value;
}

void expect_map(const YAML::Node& node, const std::string& path, std::string_view what) {
  if (!node.IsMap()) fail(node, path, "must be " + std::string(what) + ", not " + kind_of(node));
}

// One entry of a mapping: the key node (for its line) and the value.
struct Entry {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

// The entries of a mapping in file order; keys must be single values and not repeat.
std::vector<Entry> entries(const YAML::Node& map, const std::string& path) {
  std::vector<Entry> out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      fail(key, path, "a key must be a single value, not " + std::string(kind_of(key)));
    const std::string name = key.Scalar();
    if (std::any_of(out.begin(), out.end(), [&](const Entry& e) { return e.name == name; })) {
      fail(key, child_path(path, name), "given twice");
    }
    if (it->second.IsNull() && t_empty_values != nullptr) {
      t_empty_values->emplace_back(it->second, key.Mark());
    }
    out.push_back(Entry{name, key, it->second});
  }
  return out;
}

// The fields of a mapping with a fixed set of field names; any other name is an error.
class Fields {
 public:
  Fields(const YAML::Node& map, std::string path, std::vector<std::string> allowed)
      : map_(map), path_(std::move(path)) {
    for (Entry& entry : entries(map, path_)) {
      if (std::find(allowed.begin(), allowed.end(), entry.name) == allowed.end()) {
        fail(entry.key, child_path(path_, entry.name),
             "unknown field (expected " + join(allowed) + ")");
      }
      fields_.push_back(std::move(entry));
    }
  }

  const Entry* find(std::string_view name) const {
    for (const Entry& entry : fields_) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  }

  const Entry& require(std::string_view name) const {
    const Entry* entry = find(name);
    if (entry == nullptr) fail(map_, path_, "missing field " + std::string(name));
    return *entry;
  }

  std::string path(std::string_view name) const { return child_path(path_, name); }

 private:
  YAML::Node map_;
  std::string path_;
  std::vector<Entry> fields_;
};

// ---- server ----------------------------------------------------------------------------------

// "host:port", with IPv6 hosts in brackets ("[::1]:8080"). Returns what is wrong, or "".
std::string check_listen(const std::string& text) {
  const std::string usage = " must be host:port, e.g. 127.0.0.1:8080 or \"[::1]:8080\"";
  std::string_view port_text;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return in_quotes(text) + usage;
    }
    const std::string host = text.substr(1, close - 1);
    Result<IpAddress> ip = parse_ip(host);
    if (host.find(':') == std::string::npos || !ip) {
      return in_quotes(text) + " has no valid IPv6 address in its brackets";
    }
    port_text = std::string_view(text).substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) return in_quotes(text) + usage;
    const std::string host = text.substr(0, colon);
    if (host.find(':') != std::string::npos) {
      return in_quotes(text) + ": an IPv6 host must be in brackets, e.g. \"[::1]:8080\"";
    }
    if (host.empty()) return in_quotes(text) + " needs a host (0.0.0.0 listens on all interfaces)";
    const bool name_chars = std::all_of(host.begin(), host.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '-';
    });
    const bool numeric = std::all_of(host.begin(), host.end(),
                                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
    if (!name_chars || (numeric && !parse_ip(host))) {
      return in_quotes(text) + " has no valid host before the ':'";
    }
    port_text = std::string_view(text).substr(colon + 1);
  }
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
      port < 1 || port > 65535) {
    return in_quotes(text) + " needs a port from 1 to 65535";
  }
  return "";
}

void parse_server(const YAML::Node& node, ServerConfig& server) {
  if (node.IsNull()) return;
  expect_map(node, "server",
             "a mapping of listen, threads, trusted_proxies, ipv6_prefix, access_log");
  Fields fields(node, "server",
                {"listen", "threads", "trusted_proxies", "ipv6_prefix", "access_log"});
  if (const Entry* listen = fields.find("listen")) {
    const std::string path = fields.path("listen");
    const std::string text = scalar(listen->value, path, "host:port");
    if (std::string wrong = check_listen(text); !wrong.empty()) fail(listen->value, path, wrong);
    server.listen = text;
  }
  if (const Entry* threads = fields.find("threads")) {
    server.threads = static_cast<int>(whole_number(threads->value, fields.path("threads"), 1, 256));
  }
  if (const Entry* proxies = fields.find("trusted_proxies")) {
    const std::string path = fields.path("trusted_proxies");
    if (!proxies->value.IsNull()) {
      if (!proxies->value.IsSequence()) {
        fail(proxies->value, path,
             "must be a list of CIDRs such as [10.0.0.0/8], not " +
                 std::string(kind_of(proxies->value)));
      }
      for (std::size_t i = 0; i < proxies->value.size(); ++i) {
        const YAML::Node item = proxies->value[i];
        const std::string item_path = path + "[" + std::to_string(i) + "]";
        Result<Cidr> cidr = parse_cidr(scalar(item, item_path, "a CIDR such as 10.0.0.0/8"));
        if (!cidr) fail(item, item_path, cidr.error().message);
        server.trusted_proxies.push_back(*cidr);
      }
    }
  }
  if (const Entry* prefix = fields.find("ipv6_prefix")) {
    server.ipv6_prefix =
        static_cast<int>(whole_number(prefix->value, fields.path("ipv6_prefix"), 1, 128));
  }
  if (const Entry* log = fields.find("access_log")) {
    const std::string path = fields.path("access_log");
    const std::string text = scalar(log->value, path, "on or off");
    if (text == "on" || text == "true") {
      server.access_log = true;
    } else if (text == "off" || text == "false") {
      server.access_log = false;
    } else {
      fail(log->value, path, in_quotes(text) + " must be on or off");
    }
  }
}

// ---- backend ---------------------------------------------------------------------------------

void parse_backend(const YAML::Node& node, BackendConfig& backend) {
  if (node.IsNull()) return;
  expect_map(node, "backend", "a mapping of url, key_prefix, timeout, on_error");
  Fields fields(node, "backend", {"url", "key_prefix", "timeout", "on_error"});
  if (const Entry* url = fields.find("url")) {
    const std::string path = fields.path("url");
    const std::string text = scalar(url->value, path, "a backend URL");
    bool known = text == "memory" || text == "memory://";
    for (std::string_view scheme : {"redis://", "redis+cluster://", "unix://"}) {
      if (text.starts_with(scheme) && text.size() > scheme.size()) known = true;
    }
    if (!known) {
      fail(url->value, path,
           in_quotes(text) +
               " is not a backend URL (use memory, redis://host:port[/db], "
               "redis+cluster://host:port[,host:port...] or unix://path)");
    }
    backend.url = text;
  }
  if (const Entry* prefix = fields.find("key_prefix")) {
    const std::string path = fields.path("key_prefix");
    const std::string text = scalar(prefix->value, path, "a non-empty string");
    if (text.empty()) fail(prefix->value, path, "must not be empty");
    backend.key_prefix = text;
  }
  if (const Entry* timeout = fields.find("timeout")) {
    const std::string path = fields.path("timeout");
    const std::string text = scalar(timeout->value, path, "a duration such as 50ms");
    Result<Micros> micros = parse_duration(text);
    if (!micros) fail(timeout->value, path, micros.error().message);
    if (*micros % kMicrosPerMilli != 0) {
      fail(timeout->value, path, "duration " + in_quotes(text) + " must be whole milliseconds");
    }
    backend.timeout = std::chrono::milliseconds(*micros / kMicrosPerMilli);
  }
  if (const Entry* on_error = fields.find("on_error")) {
    const std::string path = fields.path("on_error");
    const std::string text = scalar(on_error->value, path, "allow or deny");
    if (text == "allow") {
      backend.on_error = OnError::kAllow;
    } else if (text == "deny") {
      backend.on_error = OnError::kDeny;
    } else {
      fail(on_error->value, path, in_quotes(text) + " must be allow or deny");
    }
  }
}

// ---- layers ----------------------------------------------------------------------------------

// What every rate of a layer shares.
struct LayerContext {
  Algorithm algorithm = Algorithm::kGcra;
  std::optional<std::int64_t> burst;
};

// "60/min", checked by Limit::make so that a config that validates can always be built.
RateSpec parse_rate_spec(const YAML::Node& node, const std::string& path,
                         const LayerContext& layer) {
  const std::string text = scalar(node, path, "a rate such as 60/min");
  Result<Rate> rate = parse_rate(text);
  if (!rate) fail(node, path, rate.error().message);
  Result<Limit> limit = Limit::make(layer.algorithm, rate->limit, rate->period, layer.burst);
  if (!limit) fail(node, path, "rate " + in_quotes(text) + ": " + limit.error().message);
  return RateSpec{.limit = rate->limit, .period = rate->period, .burst = layer.burst};
}

// An attribute name such as "ip" or "api_key".
std::string parse_attribute(const YAML::Node& node, const std::string& path) {
  const std::string text = scalar(node, path, "an attribute name such as api_key");
  if (!is_name(text)) {
    fail(node, path, "attribute " + in_quotes(text) + " must be letters, digits, '_' or '-'");
  }
  return text;
}

std::vector<std::string> parse_key(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) {
    fail(node, path,
         "must be a list of attribute names such as [ip], not " + std::string(kind_of(node)));
  }
  if (node.size() == 0) fail(node, path, "must name at least one attribute");
  std::vector<std::string> key;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    std::string name = parse_attribute(node[i], item_path);
    if (std::find(key.begin(), key.end(), name) != key.end()) {
      fail(node[i], item_path, "attribute " + in_quotes(name) + " is listed twice");
    }
    key.push_back(std::move(name));
  }
  return key;
}

PlanSelector parse_by_plan(const YAML::Node& node, const std::string& path,
                           const LayerContext& layer) {
  expect_map(node, path, "a mapping of attribute, default, plans, keys");
  Fields fields(node, path, {"attribute", "default", "plans", "keys"});
  PlanSelector selector;
  if (const Entry* attribute = fields.find("attribute")) {
    selector.attribute = parse_attribute(attribute->value, fields.path("attribute"));
  }
  const Entry& plans = fields.require("plans");
  const std::string plans_path = fields.path("plans");
  expect_map(plans.value, plans_path, "a mapping of plan name to rate, e.g. {free: 60/min}");
  for (const Entry& plan : entries(plans.value, plans_path)) {
    const std::string plan_path = child_path(plans_path, plan.name);
    if (!is_name(plan.name)) {
      fail(plan.key, plan_path,
           "plan name " + in_quotes(plan.name) + " must be letters, digits, '_' or '-'");
    }
    selector.plans[plan.name] = parse_rate_spec(plan.value, plan_path, layer);
  }
  if (selector.plans.empty()) fail(plans.value, plans_path, "must name at least one plan");
  std::vector<std::string> plan_names;
  for (const auto& [name, rate] : selector.plans) plan_names.push_back(name);
  const auto check_plan = [&](const YAML::Node& at, const std::string& at_path) {
    const std::string name = scalar(at, at_path, "a plan name");
    if (!selector.plans.contains(name)) {
      fail(at, at_path,
           "plan " + in_quotes(name) + " is not one of the plans (" + join(plan_names) + ")");
    }
    return name;
  };
  const Entry& default_plan = fields.require("default");
  selector.default_plan = check_plan(default_plan.value, fields.path("default"));
  if (const Entry* keys = fields.find("keys"); keys != nullptr && !keys->value.IsNull()) {
    const std::string keys_path = fields.path("keys");
    expect_map(keys->value, keys_path, "a mapping of attribute value to plan, e.g. {k1: pro}");
    for (const Entry& key : entries(keys->value, keys_path)) {
      const std::string key_path = child_path(keys_path, key.name);
      if (key.name.empty()) fail(key.key, keys_path, "a key must not be empty");
      selector.assignments[key.name] = check_plan(key.value, key_path);
    }
  }
  return selector;
}

EndpointSelector parse_by_endpoint(const YAML::Node& node, const std::string& path,
                                   const LayerContext& layer) {
  expect_map(node, path, "a mapping of attribute, limits");
  Fields fields(node, path, {"attribute", "limits"});
  EndpointSelector selector;
  if (const Entry* attribute = fields.find("attribute")) {
    selector.attribute = parse_attribute(attribute->value, fields.path("attribute"));
  }
  const Entry& limits = fields.require("limits");
  const std::string limits_path = fields.path("limits");
  expect_map(limits.value, limits_path, "a mapping of path to rate, e.g. {/search: 10/min}");
  for (const Entry& endpoint : entries(limits.value, limits_path)) {
    const std::string endpoint_path = child_path(limits_path, endpoint.name);
    const bool clean = std::none_of(endpoint.name.begin(), endpoint.name.end(), [](char c) {
      return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
    });
    if (!endpoint.name.starts_with('/') || !clean) {
      fail(
          endpoint.key, endpoint_path,
          "endpoint " + in_quotes(endpoint.name) + " must be a path starting with '/' (no spaces)");
    }
    selector.limits[endpoint.name] = parse_rate_spec(endpoint.value, endpoint_path, layer);
  }
  if (selector.limits.empty()) fail(limits.value, limits_path, "must name at least one endpoint");
  return selector;
}

LayerSpec parse_layer(const YAML::Node& node, const std::string& path,
                      const std::vector<LayerSpec>& earlier) {
  expect_map(node, path, "a mapping with name, key and a limit");
  Fields fields(node, path,
                {"name", "key", "algorithm", "limit", "burst", "by_plan", "by_endpoint"});
  LayerSpec layer;
  const Entry& name = fields.require("name");
  layer.name = scalar(name.value, fields.path("name"), "a layer name");
  if (!is_name(layer.name)) {
    fail(name.value, fields.path("name"),
         "layer name " + in_quotes(layer.name) + " must be letters, digits, '_' or '-'");
  }
  for (std::size_t j = 0; j < earlier.size(); ++j) {
    if (earlier[j].name == layer.name) {
      fail(name.value, fields.path("name"),
           "layer name " + in_quotes(layer.name) + " is already used by layers[" +
               std::to_string(j) + "]");
    }
  }
  layer.key = parse_key(fields.require("key").value, fields.path("key"));

  LayerContext context;
  if (const Entry* algorithm = fields.find("algorithm")) {
    const std::string text =
        scalar(algorithm->value, fields.path("algorithm"), "an algorithm name");
    Result<Algorithm> parsed = parse_algorithm(text);
    if (!parsed) fail(algorithm->value, fields.path("algorithm"), parsed.error().message);
    context.algorithm = *parsed;
  }
  layer.algorithm = context.algorithm;
  if (const Entry* burst = fields.find("burst")) {
    const std::string burst_path = fields.path("burst");
    context.burst =
        whole_number(burst->value, burst_path, 1, std::numeric_limits<std::int64_t>::max());
    if (context.algorithm != Algorithm::kTokenBucket && context.algorithm != Algorithm::kGcra) {
      fail(burst->value, burst_path,
           "burst applies only to token_bucket and gcra, not " +
               std::string(algorithm_name(context.algorithm)));
    }
  }

  std::vector<const Entry*> selectors;
  for (std::string_view selector : {"limit", "by_plan", "by_endpoint"}) {
    if (const Entry* entry = fields.find(selector)) selectors.push_back(entry);
  }
  if (selectors.empty()) fail(node, path, "needs one of limit, by_plan or by_endpoint");
  if (selectors.size() > 1) {
    // Point at whichever of the two comes later in the file.
    const Entry* first = selectors[0];
    const Entry* second = selectors[1];
    if (second->key.Mark().line < first->key.Mark().line) std::swap(first, second);
    fail(second->key, fields.path(second->name),
         "a layer takes only one of limit, by_plan or by_endpoint (it also has " + first->name +
             ")");
  }
  const Entry& selector = *selectors[0];
  const std::string selector_path = fields.path(selector.name);
  if (selector.name == "limit") {
    layer.limit = parse_rate_spec(selector.value, selector_path, context);
  } else if (selector.name == "by_plan") {
    layer.by_plan = parse_by_plan(selector.value, selector_path, context);
  } else {
    layer.by_endpoint = parse_by_endpoint(selector.value, selector_path, context);
  }
  return layer;
}

PolicySpec parse_layers(const YAML::Node& node) {
  const std::string path = "layers";
  if (!node.IsSequence() || node.size() == 0) {
    fail(node, path,
         "must be a non-empty list of layers (leave layers out for the built-in policy), not " +
             std::string(node.IsSequence() ? "an empty list" : kind_of(node)));
  }
  PolicySpec policy;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string layer_path = path + "[" + std::to_string(i) + "]";
    policy.layers.push_back(parse_layer(node[i], layer_path, policy.layers));
  }
  return policy;
}

Config parse_document(const YAML::Node& root) {
  Config config = default_config();
  if (root.IsNull()) return config;
  if (!root.IsMap()) {
    fail(root, "",
         "the config must be a mapping with server, backend and layers, not " +
             std::string(kind_of(root)));
  }
  Fields fields(root, "", {"server", "backend", "layers"});
  if (const Entry* server = fields.find("server")) parse_server(server->value, config.server);
  if (const Entry* backend = fields.find("backend")) parse_backend(backend->value, config.backend);
  if (const Entry* layers = fields.find("layers")) config.policy = parse_layers(layers->value);
  return config;
}

// Where a YAML text has content and where a second document would start: the first line that
// is not blank, a comment, a directive or a document marker; and a "---" or "..." marker line
// after content (0 when there is none). Lines are 1-based.
struct TextShape {
  int first_content_line = 0;
  int second_document_line = 0;
};

TextShape text_shape(std::string_view text) {
  TextShape shape;
  int number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool marker = (line.starts_with("---") || line.starts_with("...")) &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    if (marker) {
      if (shape.first_content_line > 0) {
        shape.second_document_line = number;
        return shape;
      }
      continue;
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#' || line[first] == '%') continue;
    if (shape.first_content_line == 0) shape.first_content_line = number;
  }
  return shape;
}

}  // namespace

Config default_config() {
  Config config;
  config.policy = seed_policy_spec();
  return config;
}

Result<Config> parse_config(std::string_view yaml_text) {
  std::vector<std::pair<YAML::Node, YAML::Mark>> empty_values;
  t_empty_values = &empty_values;
  struct Reset {
    ~Reset() { t_empty_values = nullptr; }
  } reset;
  try {
    // yaml-cpp 0.7's LoadAll never returns on some inputs (a top-level ","; found by the
    // robustness test), so the text is loaded with Load and a second document is found by its
    // separator line instead.
    const TextShape shape = text_shape(yaml_text);
    if (shape.second_document_line > 0) {
      return invalid_argument("line " + std::to_string(shape.second_document_line) +
                              ": a config file holds one YAML document");
    }
    const YAML::Node document = YAML::Load(std::string(yaml_text));
    if (document.IsNull()) {
      if (shape.first_content_line == 0) return default_config();  // empty or only comments
      return invalid_argument("line " + std::to_string(shape.first_content_line) +
                              ": the config must be a mapping of server, backend and layers");
    }
    return parse_document(document);
  } catch (const ConfigError& error) {
    // Keys and the messages of parse_rate / parse_algorithm can hold control characters.
    return invalid_argument(escaped(error.message, false));
  } catch (const YAML::Exception& error) {
    // yaml-cpp's messages can quote the offending character ("unknown escape character: ").
    return invalid_argument("line " + std::to_string(line_of(error.mark)) + ": " +
                            escaped(error.msg, false));
  } catch (const std::exception& error) {
    return invalid_argument("line 1: " + escaped(error.what(), false));
  }
}

Result<Config> load_config_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument("cannot read config file " + in_quotes(path) + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return invalid_argument("cannot read config file " + in_quotes(path) + ": " +
                            std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return invalid_argument("cannot read config file " + in_quotes(path));
  return parse_config(text.str());
}

}  // namespace spillway::policy
