#include "src/cli/inspect.h"

#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "spillway/policy_engine.h"
#include "spillway/redis_store.h"
#include "src/cli/args.h"
#include "src/cli/human_duration.h"
#include "src/cli/preflight.h"
#include "src/cli/printable_url.h"
#include "src/config/config.h"
#include "src/core/backend_schemes.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/server/json_text.h"

namespace spillway::cli {
namespace {

// "NAME=VALUE" arguments as attributes; "ip" as the server keys it (IPv6 by its prefix).
Result<policy::Attributes> read_attributes(const std::vector<std::string>& words, int ipv6_prefix) {
  policy::Attributes attributes;
  for (const std::string& word : words) {
    const std::size_t equals = word.find('=');
    if (equals == std::string::npos || equals == 0) {
      return invalid_argument("expected NAME=VALUE, got " + quote_for_error(word));
    }
    std::string name = word.substr(0, equals);
    std::string value = word.substr(equals + 1);
    if (name == policy::kIpAttribute) {
      // As the server keys it, and as the admin API takes it (an address or its key form).
      auto ip = policy::ip_attribute_key(value, ipv6_prefix, true);
      if (!ip) return invalid_argument("ip: " + ip.error().message);
      value = std::move(*ip);
    }
    if (!attributes.emplace(std::move(name), std::move(value)).second) {
      return invalid_argument("attribute " + quote_for_error(word.substr(0, equals)) +
                              " is given twice");
    }
  }
  return attributes;
}

std::string state_line(const Decision& d) {
  return std::to_string(d.remaining) + " of " + std::to_string(d.limit) +
         " left; idle (full) again in " + human_duration(d.reset_after);
}

}  // namespace

int run_inspect(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  auto args = Args::parse(argc, argv, first, {"config", "backend", "json"}, {"json"});
  if (!args) {
    err << "spillway inspect: " << args.error().message << "\n";
    return 2;
  }
  if (args->positional().empty()) {
    err << "spillway inspect: give the request's attributes as NAME=VALUE (e.g. api_key=... "
           "ip=203.0.113.7 endpoint=/search)\n";
    return 2;
  }
  const std::optional<std::string> config_path = args->get("config");
  std::optional<policy::Config> config = load_command_config("inspect", config_path, err);
  if (!config) return 1;
  std::map<std::string, std::string> flags;
  if (auto backend = args->get("backend")) {
    config->backend.url = *backend;
    flags["backend.url"] = "--backend";
  }
  auto attributes = read_attributes(args->positional(), config->server.ipv6_prefix);
  if (!attributes) {
    err << "spillway inspect: " << attributes.error().message << "\n";
    return 2;
  }
  Preflight checked = preflight(*config, config_path.value_or(""), flags);
  if (!checked.errors.empty()) {
    for (const std::string& line : checked.errors) err << "spillway inspect: " << line << "\n";
    return checked.usage_error ? 2 : 1;
  }
  const BackendScheme* scheme = find_backend_scheme(config->backend.url);
  const bool redis = scheme != nullptr && scheme->kind != BackendKind::kMemory;
  bool store_plans = false;  // a by_plan layer reads tenant records
  for (const policy::LayerSpec& layer : config->policy.layers) {
    store_plans |= layer.by_plan && layer.by_plan->source == policy::PlanSource::kStore;
  }
  // On Redis the tenant records are read as serve reads them; on memory they live in the serving
  // process (its tenants_file is that process's own: opening it here would take it away).
  std::shared_ptr<TenantDirectory> tenants;
  if (store_plans && redis) {
    auto opened = open_tenants(config->backend.url, checked.backend);
    if (!opened || !(*opened)->wait_ready(checked.backend.redis.connect_timeout)) {
      err << "spillway inspect: tenant records in \"" << printable_url(config->backend.url)
          << "\": " << (opened ? "not loaded in time" : opened.error().message) << "\n";
      return 1;
    }
    tenants = std::move(*opened);
  }
  auto policy = policy::Policy::make(config->policy, tenants);
  if (!policy) {
    err << "spillway inspect: " << policy.error().message << "\n";
    return 1;
  }
  auto checks = (*policy)->resolve(*attributes);
  if (!checks) {
    err << "spillway inspect: " << checks.error().message << "\n";
    return 1;
  }
  // Redis itself, without the wrappers serve puts around it: a circuit breaker, a cache or an
  // in-process fallback would answer for Redis, and this reads what Redis holds.
  std::unique_ptr<RedisStore> store;
  if (redis) {
    RedisStoreOptions options = checked.backend.redis;
    options.url = config->backend.url;
    auto opened = RedisStore::open(std::move(options));
    Result<void> ready = opened ? (*opened)->wait_ready(checked.backend.redis.connect_timeout)
                                : Result<void>(std::unexpected(opened.error()));
    if (!ready) {
      err << "spillway inspect: backend \"" << printable_url(config->backend.url)
          << "\": " << ready.error().message << "\n";
      return 1;
    }
    store = std::move(*opened);
  }
  // --json: the same as the text, as one object; the text goes nowhere.
  const bool as_json = args->has("json");
  std::ostringstream discarded;
  std::ostream& text = as_json ? discarded : out;
  std::string json = "{\"backend\":";
  server::append_json_string(json, server::utf8_or_escaped(printable_url(config->backend.url)));
  if (redis) {
    json += ",\"key_names\":";
    server::append_json_string(json, key_hash_name(checked.backend.redis.key_hash.hash));
  }
  json += std::string(",\"plans_from_config\":") + (store_plans && !redis ? "true" : "false") +
          ",\"layers\":[";
  text << "backend " << printable_url(config->backend.url);
  if (redis) text << ", key names " << key_hash_name(checked.backend.redis.key_hash.hash);
  text << "\n";
  if (store_plans && !redis) {
    text << "tenant records live in the serving process: plans shown are the config file's\n";
  }
  if (checks->empty()) text << "no layer applies to these attributes\n";
  int status = 0;
  bool first_layer = true;
  for (const policy::Policy::Check& check : *checks) {
    const policy::LayerSpec& layer = config->policy.layers[check.layer];
    const bool shadow = layer.mode == policy::LayerMode::kShadow;
    text << "layer " << layer.name << (shadow ? " (shadow)" : "")
         << (check.plan != nullptr ? ", plan " + *check.plan : std::string()) << ": "
         << check.limit->describe() << "\n";
    json += first_layer ? "{\"name\":" : ",{\"name\":";
    first_layer = false;
    server::append_json_string(json, server::utf8_or_escaped(layer.name));
    json += std::string(",\"shadow\":") + (shadow ? "true" : "false") + ",\"plan\":";
    if (check.plan != nullptr) {
      server::append_json_string(json, server::utf8_or_escaped(*check.plan));
    } else {
      json += "null";
    }
    json += ",\"limit\":";
    server::append_json_string(json, check.limit->describe());
    json += std::string(",\"blocked\":") + (check.blocked ? "true" : "false") + ",\"key\":";
    server::append_json_string(json, server::utf8_or_escaped(check.key));
    if (check.blocked) {
      text << "  blocked:     by a tenant record: every request is denied, nothing charged\n";
    }
    text << "  key:         " << server::utf8_or_escaped(check.key) << "\n";
    if (!store) {
      text << "  now:         not readable here: the memory backend's state lives in the serving "
              "process\n";
      json += ",\"now\":null}";
      continue;
    }
    const std::string stored = store->storage_key(check.key, *check.limit);
    text << "  redis key:   " << server::utf8_or_escaped(stored) << "\n";
    json += ",\"redis_key\":";
    server::append_json_string(json, server::utf8_or_escaped(stored));
    // Cost 0: reads the state, charges nothing.
    Result<Decision> now = store->check(check.key, *check.limit, 0);
    if (now) {
      text << "  now:         " << state_line(*now) << "\n";
      json += ",\"now\":{\"remaining\":" + std::to_string(now->remaining) +
              ",\"limit\":" + std::to_string(now->limit) +
              ",\"reset_after_us\":" + std::to_string(now->reset_after) + "}}";
    } else {
      text << "  now:         unknown: " << now.error().message << "\n";
      json += ",\"now\":null,\"error\":";
      server::append_json_string(json, server::utf8_or_escaped(now.error().message));
      json += "}";
      err << "spillway inspect: layer " << layer.name << ": " << now.error().message << "\n";
      status = 1;
    }
  }
  if (as_json) out << json << "]}\n";
  return status;
}

}  // namespace spillway::cli
