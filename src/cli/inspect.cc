#include "src/cli/inspect.h"

#include <boost/beast/http/verb.hpp>
#include <ostream>
#include <set>
#include <string>
#include <utility>

#include "spillway/policy_engine.h"
#include "spillway/redis_store.h"
#include "src/cli/admin_client.h"
#include "src/cli/args.h"
#include "src/cli/human_duration.h"
#include "src/cli/preflight.h"
#include "src/config/config.h"
#include "src/core/backend_schemes.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/server/admin_service.h"
#include "src/server/inspection.h"

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

// The inspection as text for people: the same lines whether this process read the state or a
// server did.
void print_text(const server::Inspection& inspection, std::ostream& text) {
  text << "backend " << inspection.backend;
  if (inspection.key_names) text << ", key names " << *inspection.key_names;
  text << "\n";
  if (inspection.plans_from_config) {
    text << "tenant records live in the serving process: plans shown are the config file's\n";
  }
  if (inspection.layers.empty()) text << "no layer applies to these attributes\n";
  for (const server::InspectedLayer& layer : inspection.layers) {
    text << "layer " << layer.name << (layer.shadow ? " (shadow)" : "")
         << (layer.plan ? ", plan " + *layer.plan : std::string()) << ": " << layer.limit << "\n";
    if (layer.blocked) {
      text << "  blocked:     by a tenant record: every request is denied, nothing charged\n";
    }
    text << "  key:         " << utf8_or_escaped(layer.key) << "\n";
    if (layer.redis_key) {
      text << "  redis key:   " << utf8_or_escaped(*layer.redis_key) << "\n";
    }
    if (layer.now) {
      text << "  now:         " << state_line(*layer.now) << "\n";
    } else if (layer.error) {
      text << "  now:         unknown: " << *layer.error << "\n";
    } else {
      text << "  now:         not readable here: the memory backend's state lives in the serving "
              "process\n";
    }
  }
}

// Prints the inspection (text, or `json` as it is), and a line on `err` per layer whose state
// could not be read. Returns the exit status: 1 when there was such a layer.
int print_inspection(const server::Inspection& inspection, const std::string& json, bool as_json,
                     std::ostream& out, std::ostream& err) {
  if (as_json) {
    out << json << "\n";
  } else {
    print_text(inspection, out);
  }
  int status = 0;
  for (const server::InspectedLayer& layer : inspection.layers) {
    if (!layer.error) continue;
    err << "spillway inspect: layer " << layer.name << ": " << *layer.error << "\n";
    status = 1;
  }
  return status;
}

// inspect --admin URL --token-file FILE NAME=VALUE...: the server resolves the attributes by its
// policy in force and its tenant records, and reads each layer's state through its store
// (GET /v1/inspect on its admin listener).
int inspect_through_admin(const Args& args, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& what) {
    err << "spillway inspect: " << what << "\n";
    return 2;
  };
  if (args.has("config") || args.has("backend")) {
    return usage(
        "--admin reads the server's own policy and backend: --config and --backend do not go "
        "with it");
  }
  const std::optional<std::string> url = args.get("admin");
  const std::optional<std::string> token_file = args.get("token-file");
  if (!url) return usage("--token-file goes with --admin URL (the server's admin listener)");
  if (!token_file) {
    return usage(
        "--admin needs --token-file FILE (a file of server.admin_token_file's form; its first "
        "token is sent)");
  }
  auto endpoint = parse_admin_url(*url);
  if (!endpoint) return usage(endpoint.error().message);
  // The words' form is checked here, as without --admin; what they say, by the server.
  std::string target = "/v1/inspect?";
  std::set<std::string> names;
  for (const std::string& word : args.positional()) {
    const std::size_t equals = word.find('=');
    if (equals == std::string::npos || equals == 0) {
      return usage("expected NAME=VALUE, got " + quote_for_error(word));
    }
    const std::string name = word.substr(0, equals);
    if (!names.insert(name).second) {
      return usage("attribute " + quote_for_error(name) + " is given twice");
    }
    if (target.back() != '?') target += '&';
    target += percent_encoded(name) + "=" + percent_encoded(word.substr(equals + 1));
  }
  auto tokens = server::read_admin_tokens(*token_file);
  if (!tokens) return usage(tokens.error().message);
  const std::string& token = tokens->front().token;

  Result<AdminAnswer> answer =
      admin_request(*endpoint, token, boost::beast::http::verb::get, target);
  if (!answer) {
    err << "spillway inspect: " << answer.error().message
        << " (is spillway serve running there with server.admin_listen?)\n";
    return 1;
  }
  if (answer->status == 401) {
    err << "spillway inspect: the admin API at " << *url << " refused the token of " << *token_file
        << " (401): it is not one of the server's server.admin_token_file\n";
    return 1;
  }
  if (answer->status == 404) {
    err << "spillway inspect: " << *url
        << " has no GET /v1/inspect (404): a server older than this spillway, or not its admin "
           "listener (server.admin_listen); without --admin, inspect reads Redis itself\n";
    return 1;
  }
  if (answer->status == 400) {
    err << "spillway inspect: " << admin_error_message(*answer) << "\n";
    return 2;
  }
  if (answer->status != 200) {
    err << "spillway inspect: the admin API answered " << answer->status << ": "
        << admin_error_message(*answer) << "\n";
    return 1;
  }
  auto inspection = server::parse_inspection(answer->body);
  if (!inspection) {
    err << "spillway inspect: the admin API's answer is " << inspection.error().message << "\n";
    return 1;
  }
  if (!args.has("json")) out << "server " << *url << " (its policy, tenant records and state)\n";
  return print_inspection(*inspection, answer->body, args.has("json"), out, err);
}

}  // namespace

int run_inspect(int argc, char** argv, int first, std::ostream& out, std::ostream& err) {
  auto args = Args::parse(argc, argv, first, {"config", "backend", "json", "admin", "token-file"},
                          {"json"});
  if (!args) {
    err << "spillway inspect: " << args.error().message << "\n";
    return 2;
  }
  if (args->positional().empty()) {
    err << "spillway inspect: give the request's attributes as NAME=VALUE (e.g. api_key=... "
           "ip=203.0.113.7 endpoint=/search)\n";
    return 2;
  }
  if (args->has("admin") || args->has("token-file")) return inspect_through_admin(*args, out, err);
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
  server::Inspection inspection{.backend = printable_url(config->backend.url),
                                .plans_from_config = store_plans && !redis};
  server::StoredName stored_name;
  if (store) {
    inspection.key_names = std::string(key_hash_name(checked.backend.redis.key_hash.hash));
    stored_name = [raw = store.get()](std::string_view key, const Limit& limit) {
      return raw->storage_key(key, limit);
    };
  }
  // A check of cost 0 on Redis reads the state and charges nothing; on memory nothing is read.
  inspection.layers = server::inspect_layers(**policy, *checks, store.get(), stored_name);
  return print_inspection(inspection, server::inspection_json(inspection), args->has("json"), out,
                          err);
}

}  // namespace spillway::cli
