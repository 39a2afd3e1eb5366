// The config file's layers section: each layer's name, key, algorithm, mode, cost attribute and
// its one selector (limit, by_plan or by_endpoint), checked so that a config that validates can
// always be built into a Policy.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spillway/policy_engine.h"
#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"
#include "src/policy/names.h"
#include "src/policy/routes.h"

namespace spillway::policy {

namespace {

// What every rate of a layer shares.
struct LayerContext {
  Algorithm algorithm = Algorithm::kGcra;
  std::optional<std::int64_t> burst;
  Micros max_delay = 0;
};

// "off", "0" or a zero with a valid unit ("0ms", "00s"): a field that may be switched off.
bool is_zero_duration(const std::string& text) {
  if (text == "off") return true;
  const std::size_t unit = text.find_first_not_of('0');
  if (text.empty() || unit == 0) return false;  // empty, or does not start with 0
  return unit == std::string::npos || parse_duration("1" + text.substr(unit)).has_value();
}

// "60/min", checked by Limit::make so that a config that validates can always be built.
RateSpec parse_rate_spec(const YAML::Node& node, const std::string& path,
                         const LayerContext& layer) {
  const std::string text = scalar(node, path, "a rate such as 60/min");
  Result<Rate> rate = parse_rate(text);
  if (!rate) fail(node, path, rate.error().message);
  Result<Limit> limit =
      Limit::make(layer.algorithm, rate->limit, rate->period, layer.burst, layer.max_delay);
  if (!limit) fail(node, path, "rate " + quote_for_error(text) + ": " + limit.error().message);
  return RateSpec{.limit = rate->limit, .period = rate->period, .burst = layer.burst};
}

// An attribute name such as "ip" or "api_key".
std::string parse_attribute(const YAML::Node& node, const std::string& path) {
  const std::string text = scalar(node, path, "an attribute name such as api_key");
  if (auto problem = attribute_name_problem(text)) {
    fail(node, path, "attribute " + quote_for_error(text) + " " + *problem);
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
  expect_map(node, path, "a mapping of attribute, default, plans, keys, source");
  Fields fields(node, path, {"attribute", "default", "plans", "keys", "source"});
  PlanSelector selector;
  collect([&] {
    read_choice(fields, "source",
                {{"file", PlanSource::kFile, "the keys below"},
                 {"store", PlanSource::kStore, "tenant records, then the keys below"}},
                selector.source);
  });
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
void parse_concurrency(const YAML::Node& node, const std::string& path, const Fields& fields,
                       LayerSpec& layer);

// `algorithm: concurrency` (not an Algorithm: its state is the sliding log's) and a hold's
// lifetime when the layer gives no hold_ttl.
constexpr std::string_view kConcurrency = "concurrency";
constexpr Micros kDefaultHoldTtl = Micros{60} * 1000 * 1000;

// A share of a limit: "10%", "2.5%" (to a tenth of a percent), in thousandths: 1..1000; `what`
// names it in errors.
std::int64_t share_permille(const Entry& entry, const std::string& path, std::string_view what) {
  const std::string text = scalar(entry.value, path, "a share such as 10%");
  const auto bad = [&] {
    fail(entry.value, path,
         std::string(what) + " " + quote_for_error(text) +
             " must be a percentage from 0.1% to 100%, such as 10%");
  };
  if (text.size() < 2 || text.back() != '%') bad();
  const std::string number = text.substr(0, text.size() - 1);
  const std::size_t dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  const std::string tenth = dot == std::string::npos ? "0" : number.substr(dot + 1);
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(whole) || whole.size() > 3 || !digits(tenth) || tenth.size() != 1) bad();
  const std::int64_t permille = std::stoll(whole) * 10 + (tenth[0] - '0');
  if (permille < 1 || permille > 1000) bad();
  return permille;
}

// `sync: exact | lease` and `lease: {max_age, max_share}` (docs/SPEC.md §2.3).
void parse_sync(const Fields& fields, LayerSpec& layer) {
  bool leased = false;
  read_choice(fields, "sync", {{"exact", false}, {"lease", true}}, leased);
  const Entry* lease = fields.find("lease");
  if (lease != nullptr && !leased) {
    fail(lease->key, fields.path("lease"), "lease settings need sync: lease in the same layer");
  }
  if (!leased) return;
  LeaseSpec spec;
  if (lease != nullptr) {
    const std::string path = fields.path("lease");
    expect_map(lease->value, path, "a mapping with max_age and/or max_share");
    Fields settings(lease->value, path, {"max_age", "max_share"});
    if (const Entry* age = settings.find("max_age")) {
      collect([&] {
        const std::chrono::milliseconds ms = millis(*age, settings.path("max_age"));
        spec.max_age = ms.count() * kMicrosPerMilli;
        if (auto problem = lease_spec_problem(spec)) {
          fail(age->value, settings.path("max_age"), problem->message);
        }
      });
    }
    if (const Entry* share = settings.find("max_share")) {
      collect([&] {
        spec.max_share_permille = share_permille(*share, settings.path("max_share"), "max_share");
      });
    }
  }
  layer.lease = spec;
}

// `reserve: {critical: 20%}` (docs/SPEC.md §2.4): per priority level, the share of the layer's
// capacity kept for requests of that level or above.
void parse_reserve(const Fields& fields, const std::optional<PrioritySpec>& priority,
                   LayerSpec& layer) {
  const Entry* entry = fields.find("reserve");
  if (entry == nullptr) return;
  const std::string path = fields.path("reserve");
  if (!priority) {
    fail(entry->value, path,
         "a reserve is kept for priority levels: add priority: {levels: [critical, normal], "
         "default: normal} at the top of the file");
  }
  if (layer.lease) {
    fail(entry->value, path,
         "a leased layer (sync: lease) cannot keep a reserve: what the other priorities left is "
         "only known to the shared state (use sync: exact)");
  }
  if (priority->levels.empty()) throw ConfigError{};  // the section's own error was reported
  expect_map(entry->value, path, "a mapping of priority level to share, such as {critical: 20%}");
  Fields shares(entry->value, path, priority->levels);
  std::int64_t total = 0;
  for (const std::string& level : priority->levels) {
    if (const Entry* share = shares.find(level)) {
      collect([&] {
        const std::int64_t permille = share_permille(*share, shares.path(level), "a reserve");
        layer.reserve[level] = permille;
        total += permille;
      });
    }
  }
  if (total > 1000) {
    fail(entry->value, path,
         "the shares add up to " + std::to_string(total / 10) + "." + std::to_string(total % 10) +
             "%, more than 100%");
  }
  if (layer.reserve.contains(priority->levels.back())) {
    fail(entry->value, path,
         "a share kept for " + quote_for_error(priority->levels.back()) +
             ", the lowest level, keeps nothing from anyone: name a higher level");
  }
  // Every rate of the layer leaves each level something (as Policy::make checks, with the line).
  if (layer.reserve.empty()) return;
  Result<std::vector<std::int64_t>> kept = kept_by_level(layer, priority);
  if (!kept) fail(entry->value, path, kept.error().message);
  std::vector<RateSpec> rates;
  if (layer.limit) rates.push_back(*layer.limit);
  if (layer.by_plan) {
    for (const auto& [plan, rate] : layer.by_plan->plans) rates.push_back(rate);
  }
  if (layer.by_endpoint) {
    for (const auto& [route, rate] : layer.by_endpoint->limits) rates.push_back(rate);
  }
  for (const RateSpec& rate : rates) {
    Result<Limit> limit = Limit::make(layer.algorithm, rate.limit, rate.period, rate.burst);
    if (!limit) continue;  // reported with the rate
    Result<std::vector<Limit>> views = level_views(*limit, layer, *priority, *kept);
    if (!views) fail(entry->value, path, views.error().message);
  }
}

LayerSpec parse_layer(const YAML::Node& node, const std::string& path,
                      const std::vector<LayerSpec>& earlier,
                      const std::optional<PrioritySpec>& priority) {
  expect_map(node, path, "a mapping with name, key and a limit");
  Fields fields(node, path,
                {"name", "key", "algorithm", "limit", "burst", "max_delay", "by_plan",
                 "by_endpoint", "mode", "cost", "sync", "lease", "reserve", "hold_ttl"});
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
      if (text == kConcurrency) {
        context.algorithm = Algorithm::kSlidingLog;  // the state a concurrency limit keeps
        layer.hold_ttl = kDefaultHoldTtl;
        return;
      }
      Result<Algorithm> parsed = parse_algorithm(text);
      if (!parsed) {
        std::string message = parsed.error().message;  // "... (use a or b)": one more kind
        message.insert(message.size() - 1, ", or concurrency for requests in flight");
        fail(algorithm->value, fields.path("algorithm"), message);
      }
      context.algorithm = *parsed;
    });
  layer.algorithm = context.algorithm;
  collect([&] {
    read_choice(fields, "mode", {{"enforce", LayerMode::kEnforce}, {"shadow", LayerMode::kShadow}},
                layer.mode);
  });
  if (const Entry* cost = fields.find("cost"))
    collect([&] {
      const std::string text = scalar(cost->value, fields.path("cost"), "an attribute name");
      if (auto problem = attribute_name_problem(text)) {
        fail(cost->value, fields.path("cost"),
             "cost attribute " + quote_for_error(text) + " " + *problem +
                 " (cost: names the attribute that holds each request's cost, e.g. cost: "
                 "tokens)");
      }
      // These are filled with an address, a path or a method: never a whole number.
      if (text == "ip" || text == kEndpointAttribute || text == kMethodAttribute) {
        fail(cost->value, fields.path("cost"),
             "cost attribute " + quote_for_error(text) +
                 " is never a whole number (it is the request's " +
                 (text == "ip"               ? "address"
                  : text == kMethodAttribute ? "method"
                                             : "path") +
                 "): every request would be refused; name the attribute that holds the cost");
      }
      layer.cost = text;
    });
  collect([&] { parse_sync(fields, layer); });
  if (!algorithm_read) return layer;
  if (const Entry* burst = fields.find("burst"))
    collect([&] {
      const std::string burst_path = fields.path("burst");
      const std::int64_t value =
          whole_number(burst->value, burst_path, 1, std::numeric_limits<std::int64_t>::max());
      if (layer.is_concurrency()) return;  // parse_concurrency says why
      if (!takes_burst(context.algorithm)) {
        fail(burst->value, burst_path, burst_not_taken_message(context.algorithm));
      }
      context.burst = value;
    });
  if (const Entry* delay = fields.find("max_delay"))
    collect([&] {
      const std::string delay_path = fields.path("max_delay");
      // `off`, `0`, or a zero with a unit (`0ms`): no delay (a duration is otherwise above 0).
      const bool off = delay->value.IsScalar() && is_zero_duration(delay->value.Scalar());
      const Micros value = off ? 0 : std::chrono::microseconds(millis(*delay, delay_path)).count();
      if (value > 0 && !takes_max_delay(context.algorithm) && !layer.is_concurrency()) {
        fail(delay->value, delay_path, max_delay_not_taken_message(context.algorithm));
      }
      if (value > 0 && layer.lease)
        fail(delay->value, delay_path, std::string(lease_refuses_delay()));
      context.max_delay = value;
      layer.max_delay = value;
    });
  if (layer.is_concurrency()) {
    collect([&] { parse_concurrency(node, path, fields, layer); });
  } else {
    if (const Entry* hold = fields.find("hold_ttl")) {
      collect([&] {
        fail(hold->key, fields.path("hold_ttl"),
             "hold_ttl applies only to algorithm: concurrency (the lifetime of a hold)");
      });
    }
    collect([&] { parse_selector(node, path, fields, context, layer); });
  }
  collect([&] { parse_reserve(fields, priority, layer); });
  return layer;
}

// A concurrency layer's `limit: 20` (requests in flight per key) and `hold_ttl`, and what such a
// layer may not have (concurrency_layer_problem, Policy::make's own check, with its line).
void parse_concurrency(const YAML::Node& node, const std::string& path, const Fields& fields,
                       LayerSpec& layer) {
  if (const Entry* hold = fields.find("hold_ttl")) {
    collect([&] {
      const Micros value =
          std::chrono::microseconds(millis(*hold, fields.path("hold_ttl"))).count();
      if (Result<Limit> made = Limit::concurrency(1, value); !made) {
        fail(hold->value, fields.path("hold_ttl"), made.error().message);
      }
      layer.hold_ttl = value;
    });
  }
  if (const Entry* limit = fields.find("limit")) {
    collect([&] {
      const std::string limit_path = fields.path("limit");
      if (limit->value.IsScalar() && limit->value.Scalar().find('/') != std::string::npos) {
        fail(limit->value, limit_path,
             "a concurrency limit is a number of requests in flight per key, such as limit: 20, "
             "not a rate");
      }
      const std::int64_t value = whole_number(limit->value, limit_path, 1, kMaxExact - 1);
      layer.limit = RateSpec{.limit = value, .period = *layer.hold_ttl};
    });
  }
  for (std::string_view field : {"by_plan", "by_endpoint", "burst"}) {
    if (const Entry* entry = fields.find(field)) {
      collect([&] {
        fail(entry->key, fields.path(entry->name),
             std::string(field) +
                 " does not apply to algorithm: concurrency, which takes one fixed limit: the "
                 "requests in flight per key, such as limit: 20");
      });
    }
  }
  if (!fields.find("limit") && !fields.find("by_plan") && !fields.find("by_endpoint")) {
    if (fields.had_unknown()) return;
    fail(node, path, "needs limit: the requests in flight per key, such as limit: 20");
  }
  if (std::optional<Error> problem = concurrency_layer_problem(layer)) {
    const Entry* entry = fields.find(problem->field);
    if (entry == nullptr) fail(node, path, problem->message);
    fail(entry->key, fields.path(entry->name), problem->message);
  }
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

}  // namespace

PolicySpec parse_layers(const YAML::Node& node, const std::optional<PrioritySpec>& priority) {
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
    collect([&] {
      policy.layers.push_back(parse_layer(node[i], layer_path, policy.layers, priority));
    });
  }
  return policy;
}

}  // namespace spillway::policy
