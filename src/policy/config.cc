// parse_config: the config file's sections (server, backend, layers), read through the field
// helpers of yaml_fields.h, and the checks that make a config that validates always buildable.
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

#include "src/core/backend_schemes.h"
#include "src/core/text.h"
#include "src/policy/listen_address.h"
#include "src/policy/names.h"
#include "src/policy/routes.h"
#include "src/policy/yaml_fields.h"
#include "src/policy/yaml_syntax.h"

namespace spillway::policy {
namespace {

// ---- server ----------------------------------------------------------------------------------

// A duration in whole milliseconds.
std::chrono::milliseconds millis(const Entry& entry, const std::string& path) {
  const std::string text = scalar(entry.value, path, "a duration such as 50ms");
  Result<Micros> micros = parse_duration(text);
  if (!micros) fail(entry.value, path, micros.error().message);
  if (*micros % kMicrosPerMilli != 0) {
    fail(entry.value, path, "duration " + quote_for_error(text) + " must be whole milliseconds");
  }
  return std::chrono::milliseconds(*micros / kMicrosPerMilli);
}

void parse_server(const YAML::Node& node, ServerConfig& server) {
  if (node.IsNull()) return;
  expect_map(node, "server",
             "a mapping of listen, threads, trusted_proxies, ipv6_prefix, access_log");
  Fields fields(node, "server",
                {"listen", "threads", "trusted_proxies", "ipv6_prefix", "access_log", "grpc_listen",
                 "dashboard", "dashboard_keys", "unknown_attributes", "client_ip_header"});
  if (const Entry* header = fields.find("client_ip_header"))
    collect([&] {
      const std::string path = fields.path("client_ip_header");
      const std::string text =
          scalar(header->value, path, "x-forwarded-for, forwarded or x-real-ip");
      std::optional<ClientIpHeader> parsed = parse_client_ip_header(text);
      if (!parsed) {
        fail(header->value, path,
             quote_for_error(text) + " must be x-forwarded-for, forwarded or x-real-ip");
      }
      server.client_ip_header = *parsed;
    });
  if (const Entry* unknown = fields.find("unknown_attributes"))
    collect([&] {
      const std::string path = fields.path("unknown_attributes");
      const std::string text = scalar(unknown->value, path, "reject or ignore");
      if (text != "reject" && text != "ignore") {
        fail(unknown->value, path, quote_for_error(text) + " must be reject or ignore");
      }
      server.reject_unknown_attributes = text == "reject";
    });
  if (const Entry* dashboard = fields.find("dashboard"))
    collect([&] { server.dashboard = boolean(dashboard->value, fields.path("dashboard")); });
  if (const Entry* keys = fields.find("dashboard_keys"))
    collect([&] {
      const std::string path = fields.path("dashboard_keys");
      const std::string text = scalar(keys->value, path, "masked or clear");
      if (text != "masked" && text != "clear") {
        fail(keys->value, path, quote_for_error(text) + " must be masked or clear");
      }
      server.dashboard_mask_keys = text == "masked";
    });
  if (const Entry* grpc = fields.find("grpc_listen"))
    collect([&] {
      const std::string path = fields.path("grpc_listen");
      const std::string text = scalar(grpc->value, path, "host:port");
      Result<ListenAddress> address = parse_listen_address(text);
      if (!address) fail(grpc->value, path, address.error().message);
      server.grpc_listen = text;
    });
  if (const Entry* listen = fields.find("listen"))
    collect([&] {
      const std::string path = fields.path("listen");
      const std::string text = scalar(listen->value, path, "host:port");
      Result<ListenAddress> address = parse_listen_address(text);
      if (!address) fail(listen->value, path, address.error().message);
      server.listen = text;
    });
  if (const Entry* threads = fields.find("threads"))
    collect([&] {
      server.threads =
          static_cast<int>(whole_number(threads->value, fields.path("threads"), 1, 256));
    });
  if (const Entry* proxies = fields.find("trusted_proxies"))
    collect([&] {
      const std::string path = fields.path("trusted_proxies");
      if (!proxies->value.IsNull()) {
        if (!proxies->value.IsSequence()) {
          fail(proxies->value, path,
               "must be a list of CIDRs such as [10.0.0.0/8], not " +
                   std::string(kind_of(proxies->value)));
        }
        for (std::size_t i = 0; i < proxies->value.size(); ++i) {
          collect([&] {
            const YAML::Node item = proxies->value[i];
            const std::string item_path = path + "[" + std::to_string(i) + "]";
            Result<Cidr> cidr = parse_cidr(scalar(item, item_path, "a CIDR such as 10.0.0.0/8"));
            if (!cidr) fail(item, item_path, cidr.error().message);
            server.trusted_proxies.push_back(*cidr);
          });
        }
      }
    });
  if (const Entry* prefix = fields.find("ipv6_prefix"))
    collect([&] {
      server.ipv6_prefix =
          static_cast<int>(whole_number(prefix->value, fields.path("ipv6_prefix"), 1, 128));
    });
  if (const Entry* log = fields.find("access_log"))
    collect([&] { server.access_log = boolean(log->value, fields.path("access_log")); });
}

// ---- backend ---------------------------------------------------------------------------------

void parse_backend(const YAML::Node& node, BackendConfig& backend) {
  if (node.IsNull()) return;
  expect_map(node, "backend",
             "a mapping of url, key_prefix, timeout, on_error, breaker_failures, breaker_probe, "
             "tls, over_limit_cache, require_at_start");
  Fields fields(node, "backend",
                {"url", "key_prefix", "timeout", "on_error", "breaker_failures", "breaker_probe",
                 "tls", "over_limit_cache", "require_at_start"});
  if (const Entry* require = fields.find("require_at_start"))
    collect([&] {
      backend.require_at_start = boolean(require->value, fields.path("require_at_start"));
    });
  if (const Entry* cache = fields.find("over_limit_cache"))
    collect([&] {
      backend.over_limit_cache = static_cast<std::size_t>(
          whole_number(cache->value, fields.path("over_limit_cache"), 0, 100'000'000));
    });
  bool url_read = true;  // the TLS check below needs the URL as written
  if (const Entry* url = fields.find("url"))
    url_read = collect([&] {
      const std::string path = fields.path("url");
      const std::string text = scalar(url->value, path, "a backend URL");
      // A Redis URL needs something after its scheme.
      const BackendScheme* scheme = find_backend_scheme(text);
      const bool known = scheme != nullptr && (scheme->kind == BackendKind::kMemory ||
                                               text.size() > scheme->prefix.size());
      if (!known) {
        fail(url->value, path,
             quote_for_error(text) +
                 " is not a backend URL (use memory, redis://host:port[/db], rediss://host:port, "
                 "redis+cluster://host:port[,host:port...], "
                 "redis+sentinel://host:port[,host:port...]/MASTER_NAME or unix://path)");
      }
      backend.url = text;
    });
  if (const Entry* prefix = fields.find("key_prefix"))
    collect([&] {
      const std::string path = fields.path("key_prefix");
      const std::string text = scalar(prefix->value, path, "a non-empty string");
      if (text.empty()) fail(prefix->value, path, "must not be empty");
      backend.key_prefix = text;
    });

  if (const Entry* timeout = fields.find("timeout"))
    collect([&] { backend.timeout = millis(*timeout, fields.path("timeout")); });
  if (const Entry* failures = fields.find("breaker_failures"))
    collect([&] {
      backend.breaker_failures = static_cast<int>(
          whole_number(failures->value, fields.path("breaker_failures"), 0, 1000000));
    });
  if (const Entry* probe = fields.find("breaker_probe"))
    collect([&] { backend.breaker_probe = millis(*probe, fields.path("breaker_probe")); });
  if (const Entry* on_error = fields.find("on_error"))
    collect([&] {
      const std::string path = fields.path("on_error");
      const std::string text = scalar(on_error->value, path, "allow, deny or local");
      const std::optional<OnError> parsed = parse_on_error(text);
      if (!parsed) {
        fail(on_error->value, path, quote_for_error(text) + " must be allow, deny or local");
      }
      backend.on_error = *parsed;
    });
  if (const Entry* tls = fields.find("tls"))
    collect([&] {
      const std::string path = fields.path("tls");
      expect_map(tls->value, path,
                 "a mapping of ca_file, cert_file, key_file, server_name, insecure");
      Fields tls_fields(tls->value, path,
                        {"ca_file", "cert_file", "key_file", "server_name", "insecure"});
      TlsOptions& out = backend.tls.emplace();
      for (auto [name, field] :
           {std::pair{"ca_file", &out.ca_file}, std::pair{"cert_file", &out.cert_file},
            std::pair{"key_file", &out.key_file}, std::pair{"server_name", &out.server_name}}) {
        if (const Entry* entry = tls_fields.find(name))
          collect([&] {
            const std::string field_path = tls_fields.path(name);
            *field = scalar(entry->value, field_path, "a file path or name");
            if (field->empty()) fail(entry->value, field_path, "must not be empty");
          });
      }
      if (const Entry* insecure = tls_fields.find("insecure"))
        collect([&] { out.insecure = boolean(insecure->value, tls_fields.path("insecure")); });
      // Only one of the two written (one written but unusable was reported above).
      if ((tls_fields.find("cert_file") == nullptr) != (tls_fields.find("key_file") == nullptr)) {
        fail(tls->value, path, "cert_file and key_file go together (mutual TLS needs both)");
      }
      const BackendScheme* scheme = find_backend_scheme(backend.url);
      const bool tls_url = scheme != nullptr && scheme->tls;
      if (!tls_url && url_read) {
        fail(tls->value, path,
             "is set but backend.url is not rediss:// or rediss+cluster:// (a plain URL would send "
             "everything in clear)");
      }
    });
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
  if (!limit) fail(node, path, "rate " + quote_for_error(text) + ": " + limit.error().message);
  return RateSpec{.limit = rate->limit, .period = rate->period, .burst = layer.burst};
}

// An attribute name such as "ip" or "api_key".
std::string parse_attribute(const YAML::Node& node, const std::string& path) {
  const std::string text = scalar(node, path, "an attribute name such as api_key");
  if (!is_name(text)) {
    fail(node, path, "attribute " + quote_for_error(text) + " must be letters, digits, '_' or '-'");
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
      fail(node[i], item_path, "attribute " + quote_for_error(name) + " is listed twice");
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
  bool plans_read = true;  // the default and the keys name plans: checked when all were read
  for (const Entry& plan : entries(plans.value, plans_path)) {
    plans_read &= collect([&] {
      const std::string plan_path = child_path(plans_path, plan.name);
      if (!is_name(plan.name)) {
        fail(plan.key, plan_path,
             "plan name " + quote_for_error(plan.name) + " must be letters, digits, '_' or '-'");
      }
      selector.plans[plan.name] = parse_rate_spec(plan.value, plan_path, layer);
    });
  }
  if (!plans_read) return selector;
  if (selector.plans.empty()) fail(plans.value, plans_path, "must name at least one plan");
  std::vector<std::string> plan_names;
  for (const auto& [name, rate] : selector.plans) plan_names.push_back(name);
  const auto check_plan = [&](const YAML::Node& at, const std::string& at_path) {
    const std::string name = scalar(at, at_path, "a plan name");
    if (!selector.plans.contains(name)) {
      fail(at, at_path,
           "plan " + quote_for_error(name) + " is not one of the plans (" + join(plan_names) + ")");
    }
    return name;
  };
  const Entry& default_plan = fields.require("default");
  selector.default_plan = check_plan(default_plan.value, fields.path("default"));
  if (const Entry* keys = fields.find("keys"); keys != nullptr && !keys->value.IsNull()) {
    const std::string keys_path = fields.path("keys");
    expect_map(keys->value, keys_path, "a mapping of attribute value to plan, e.g. {k1: pro}");
    for (const Entry& key : entries(keys->value, keys_path)) {
      collect([&] {
        const std::string key_path = child_path(keys_path, key.name);
        if (key.name.empty()) fail(key.key, keys_path, "a key must not be empty");
        selector.assignments[key.name] = check_plan(key.value, key_path);
      });
    }
  }
  return selector;
}

EndpointSelector parse_by_endpoint(const YAML::Node& node, const std::string& path,
                                   const LayerContext& layer) {
  expect_map(node, path, "a mapping of attribute, limits, case_sensitive");
  Fields fields(node, path, {"attribute", "limits", "case_sensitive"});
  EndpointSelector selector;
  if (const Entry* attribute = fields.find("attribute")) {
    selector.attribute = parse_attribute(attribute->value, fields.path("attribute"));
  }
  if (const Entry* sensitive = fields.find("case_sensitive")) {
    selector.case_sensitive = boolean(sensitive->value, fields.path("case_sensitive"));
  }
  const Entry& limits = fields.require("limits");
  const std::string limits_path = fields.path("limits");
  expect_map(limits.value, limits_path,
             "a mapping of route to rate, e.g. {/search: 10/min, \"POST /orders/{id}\": 5/min}");
  std::vector<std::string> routes;  // in file order: a clash is reported at the later route
  for (const Entry& endpoint : entries(limits.value, limits_path)) {
    const std::string endpoint_path = child_path(limits_path, endpoint.name);
    routes.push_back(endpoint.name);
    if (Result<RouteTable> table = RouteTable::make(routes, selector.case_sensitive); !table) {
      fail(endpoint.key, endpoint_path, table.error().message);
    }
    selector.limits[endpoint.name] = parse_rate_spec(endpoint.value, endpoint_path, layer);
  }
  if (selector.limits.empty()) fail(limits.value, limits_path, "must name at least one endpoint");
  return selector;
}

void parse_selector(const YAML::Node& node, const std::string& path, const Fields& fields,
                    const LayerContext& context, LayerSpec& layer);

LayerSpec parse_layer(const YAML::Node& node, const std::string& path,
                      const std::vector<LayerSpec>& earlier) {
  expect_map(node, path, "a mapping with name, key and a limit");
  Fields fields(node, path,
                {"name", "key", "algorithm", "limit", "burst", "by_plan", "by_endpoint", "mode"});
  LayerSpec layer;
  collect([&] {
    const Entry& name = fields.require("name");
    layer.name = scalar(name.value, fields.path("name"), "a layer name");
    if (!is_name(layer.name)) {
      fail(name.value, fields.path("name"),
           "layer name " + quote_for_error(layer.name) + " must be letters, digits, '_' or '-'");
    }
    for (std::size_t j = 0; j < earlier.size(); ++j) {
      if (earlier[j].name == layer.name) {
        fail(name.value, fields.path("name"),
             "layer name " + quote_for_error(layer.name) + " is already used by layers[" +
                 std::to_string(j) + "]");
      }
    }
  });
  collect([&] { layer.key = parse_key(fields.require("key").value, fields.path("key")); });

  LayerContext context;
  bool algorithm_read = true;  // the burst and the rates are checked against the algorithm
  if (const Entry* algorithm = fields.find("algorithm"))
    algorithm_read = collect([&] {
      const std::string text =
          scalar(algorithm->value, fields.path("algorithm"), "an algorithm name");
      Result<Algorithm> parsed = parse_algorithm(text);
      if (!parsed) fail(algorithm->value, fields.path("algorithm"), parsed.error().message);
      context.algorithm = *parsed;
    });
  layer.algorithm = context.algorithm;
  if (const Entry* mode = fields.find("mode"))
    collect([&] {
      const std::string text = scalar(mode->value, fields.path("mode"), "enforce or shadow");
      if (text == "shadow") {
        layer.mode = LayerMode::kShadow;
      } else if (text != "enforce") {
        fail(mode->value, fields.path("mode"),
             quote_for_error(text) + " must be enforce or shadow");
      }
    });
  if (!algorithm_read) return layer;
  if (const Entry* burst = fields.find("burst"))
    collect([&] {
      const std::string burst_path = fields.path("burst");
      const std::int64_t value =
          whole_number(burst->value, burst_path, 1, std::numeric_limits<std::int64_t>::max());
      if (!takes_burst(context.algorithm)) {
        fail(burst->value, burst_path, burst_not_taken_message(context.algorithm));
      }
      context.burst = value;
    });
  collect([&] { parse_selector(node, path, fields, context, layer); });
  return layer;
}

// The layer's one selector: limit, by_plan or by_endpoint.
void parse_selector(const YAML::Node& node, const std::string& path, const Fields& fields,
                    const LayerContext& context, LayerSpec& layer) {
  std::vector<const Entry*> selectors;
  for (std::string_view selector : {"limit", "by_plan", "by_endpoint"}) {
    if (const Entry* entry = fields.find(selector)) selectors.push_back(entry);
  }
  if (selectors.empty()) {
    if (fields.had_unknown()) return;  // most likely the unknown field, misspelled: reported
    fail(node, path, "needs one of limit, by_plan or by_endpoint");
  }
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
    // A layer with an error is kept for the name checks of the later ones.
    collect([&] { policy.layers.push_back(parse_layer(node[i], layer_path, policy.layers)); });
  }
  return policy;
}

// One of `choices` (the first of each pair is the word in the file).
template <typename T>
T choice(const Entry& entry, const std::string& path,
         std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) names.emplace_back(name);
  const std::string text = scalar(entry.value, path, join(names));
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
  }
  fail(entry.value, path, quote_for_error(text) + " must be one of " + join(names));
}

void parse_rls(const YAML::Node& node, RlsConfig& rls) {
  if (node.IsNull()) return;
  expect_map(node, "rls", "a mapping of config, charge_on_deny, response_headers, on_error, watch");
  Fields fields(node, "rls", {"config", "charge_on_deny", "response_headers", "on_error", "watch"});
  if (const Entry* config = fields.find("config"))
    collect([&] {
      rls.config = scalar(config->value, fields.path("config"), "a file or directory path");
      if (rls.config.empty()) fail(config->value, fields.path("config"), "must not be empty");
    });
  if (const Entry* charge = fields.find("charge_on_deny"))
    collect([&] { rls.charge_on_deny = boolean(charge->value, fields.path("charge_on_deny")); });
  if (const Entry* headers = fields.find("response_headers"))
    collect([&] {
      rls.response_headers = choice<RlsHeaders>(*headers, fields.path("response_headers"),
                                                {{"off", RlsHeaders::kOff},
                                                 {"draft", RlsHeaders::kDraft},
                                                 {"x-ratelimit", RlsHeaders::kXRateLimit}});
    });
  if (const Entry* on_error = fields.find("on_error"))
    collect([&] {
      rls.on_error = choice<RlsOnError>(*on_error, fields.path("on_error"),
                                        {{"error", RlsOnError::kError},
                                         {"allow", RlsOnError::kAllow},
                                         {"deny", RlsOnError::kDeny}});
    });
  if (const Entry* watch = fields.find("watch"))
    collect([&] {
      const bool off = watch->value.IsScalar() &&
                       (watch->value.Scalar() == "0" || watch->value.Scalar() == "off");
      rls.watch = off ? std::chrono::milliseconds(0) : millis(*watch, fields.path("watch"));
    });
}

Config parse_document(const YAML::Node& root) {
  Config config = default_config();
  if (root.IsNull()) return config;
  if (!root.IsMap()) {
    fail(root, "",
         "the config must be a mapping with server, backend and layers, not " +
             std::string(kind_of(root)));
  }
  Fields fields(root, "", {"server", "backend", "layers", "rls"});
  if (const Entry* rls = fields.find("rls")) collect([&] { parse_rls(rls->value, config.rls); });
  if (const Entry* server = fields.find("server")) {
    collect([&] { parse_server(server->value, config.server); });
  }
  if (const Entry* backend = fields.find("backend")) {
    collect([&] { parse_backend(backend->value, config.backend); });
  }
  if (const Entry* layers = fields.find("layers")) {
    collect([&] { config.policy = parse_layers(layers->value); });
  }
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
  return parse_config(*text);
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
