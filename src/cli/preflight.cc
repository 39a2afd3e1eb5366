// serve's checks before it starts, shared with validate (see preflight.h).
#include "src/cli/preflight.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <utility>

#include "src/cli/exposure.h"

namespace spillway::cli {
namespace {

// Whether a layer's plans come from the tenant records (`source: store`).
bool has_store_plans(const policy::Config& config) {
  return std::any_of(config.policy.layers.begin(), config.policy.layers.end(),
                     [](const policy::LayerSpec& layer) {
                       return layer.by_plan && layer.by_plan->source == policy::PlanSource::kStore;
                     });
}

// The key secret file's bytes, without the line endings an editor or `openssl rand -hex 32 > FILE`
// leaves at the end (so a secret cannot end in CR or LF bytes). Its length is checked with the key
// hash (KeyDigest::make).
Result<std::string> read_key_secret(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return invalid_argument("cannot read \"" + path + "\": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return invalid_argument("cannot read \"" + path + "\": " + std::strerror(errno));
  }
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return invalid_argument("cannot read \"" + path + "\": a read error");
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  return secret;
}

// Builds each error line with where the value came from.
class Problems {
 public:
  Problems(const policy::Config& config, const std::string& file,
           const std::map<std::string, std::string>& flags, Preflight& out)
      : config_(config), file_(file), flags_(flags), out_(out) {}

  // Whether `path`'s value came from a flag.
  bool from_flag(const std::string& path) const { return flags_.contains(path); }

  void add(const std::string& path, const std::string& what) {
    out_.errors.push_back(located(path, what));
  }
  void warn(const std::string& path, const std::string& what) {
    out_.warnings.push_back(located(path, what));
  }

 private:
  std::string located(const std::string& path, const std::string& what) const {
    if (auto flag = flags_.find(path); flag != flags_.end()) return flag->second + ": " + what;
    const int line = config_.lines.of(path);
    std::string text = file_.empty() ? "" : file_ + ": ";
    if (line > 0) text += "line " + std::to_string(line) + ": ";
    return text + path + ": " + what;
  }

  const policy::Config& config_;
  const std::string& file_;
  const std::map<std::string, std::string>& flags_;
  Preflight& out_;
};

}  // namespace

void print_lines(std::ostream& out, const std::string& prefix, std::string_view lines) {
  while (!lines.empty()) {
    const std::size_t end = lines.find('\n');
    out << prefix << lines.substr(0, end) << "\n";
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 1);
  }
}

std::optional<policy::Config> load_command_config(std::string_view command,
                                                  const std::optional<std::string>& path,
                                                  std::ostream& err) {
  auto config = path ? policy::load_config_file(*path) : policy::default_config();
  if (config) return std::move(*config);
  print_lines(err, "spillway " + std::string(command) + ": " + (path ? *path + ": " : ""),
              config.error().message);
  return std::nullopt;
}

BackendOptions backend_options(const policy::Config& config) {
  BackendOptions options{.redis = {.key_prefix = config.backend.key_prefix,
                                   .timeout = config.backend.timeout,
                                   .tls = config.backend.tls,
                                   .key_hash = {.hash = config.backend.key_hash}},
                         .breaker = {.failures = config.backend.breaker_failures,
                                     .probe_interval = config.backend.breaker_probe},
                         .local_fallback = config.backend.on_error == policy::OnError::kLocal,
                         .over_limit_cache = config.backend.over_limit_cache,
                         .leases = LeaseStoreOptions{}};
  options.memory.max_reservations = static_cast<std::size_t>(config.server.max_reservations);
  options.memory.max_settled_reservations = options.memory.max_reservations;
  if (config.backend.max_batch) options.redis.max_batch = *config.backend.max_batch;
  if (config.backend.max_in_flight) options.redis.max_in_flight = *config.backend.max_in_flight;
  options.redis.replica_acks = config.backend.replica_acks;
  return options;
}

Preflight preflight(const policy::Config& config, const std::string& file,
                    const std::map<std::string, std::string>& flags) {
  Preflight out;
  Problems problems(config, file, flags, out);
  // A config file that sets nothing (empty, or only comments) is the built-in policy: said loudly,
  // since a file that was meant to hold a policy (a bad mount, a wrong path) would otherwise
  // serve another one silently.
  if (!file.empty() && config.lines.by_path.empty()) {
    std::string names;
    for (const policy::LayerSpec& layer : config.policy.layers) {
      names += (names.empty() ? "" : ", ") + layer.name;
    }
    out.warnings.push_back(file +
                           ": the file sets nothing (it is empty or only comments): the built-in "
                           "policy applies, as without --config (layers " +
                           names + "; backend " + config.backend.url + "; listen " +
                           config.server.listen + ")");
  }

  if (auto listen = policy::parse_listen_address(config.server.listen)) {
    out.listen = std::move(*listen);
  } else {
    problems.add("server.listen", listen.error().message);
    out.usage_error |= problems.from_flag("server.listen");
  }
  bool grpc_on = false;
  if (!config.server.grpc_listen.empty()) {
    grpc_on = true;
    if (auto grpc = policy::parse_listen_address(config.server.grpc_listen)) {
      out.grpc_listen = std::move(*grpc);
    } else {
      problems.add("server.grpc_listen", grpc.error().message);
      out.usage_error |= problems.from_flag("server.grpc_listen");
    }
  }

  if (config.server.tls) {
    if (auto tls = server::ServerTls::make(*config.server.tls)) {
      out.tls = std::move(*tls);
      if (auto exposed = exposed_secret_file(config.server.tls->key_file)) {
        problems.warn("server.tls.key_file", *exposed);
      }
    } else {
      problems.add("server.tls", tls.error().message);
    }
  }
  if (!config.server.admin_listen.empty()) {
    if (auto admin = policy::parse_listen_address(config.server.admin_listen)) {
      if (admin->port != 0 && ((admin->port == out.listen.port && admin->host == out.listen.host) ||
                               (out.grpc_listen && admin->port == out.grpc_listen->port &&
                                admin->host == out.grpc_listen->host))) {
        problems.add("server.admin_listen",
                     "must not be the decision or gRPC listener's address: the admin API has a "
                     "listener of its own");
      } else {
        if (!is_loopback_host(admin->host) && !config.server.tls) {
          problems.warn("server.admin_listen",
                        admin->host +
                            " is not a loopback address and the admin listener has no TLS: "
                            "bearer tokens and tenant keys cross the network in clear");
        }
        out.admin_listen = std::move(*admin);
      }
    } else {
      problems.add("server.admin_listen", admin.error().message);
    }
    if (config.server.admin_token_file.empty()) {
      problems.add("server.admin_listen",
                   "the admin API needs server.admin_token_file (a file of bearer tokens)");
    } else if (auto tokens = server::read_admin_tokens(config.server.admin_token_file)) {
      out.admin_tokens = std::move(*tokens);
      if (auto exposed = exposed_secret_file(config.server.admin_token_file)) {
        problems.warn("server.admin_token_file", *exposed);
      }
    } else {
      problems.add("server.admin_token_file", tokens.error().message);
    }
  } else if (!config.server.admin_token_file.empty()) {
    problems.add("server.admin_token_file",
                 "is only read with server.admin_listen (the admin API is off)");
  }
  out.tenants = has_store_plans(config) || out.admin_listen.has_value();
  bool remembers_denials = config.backend.over_limit_cache > 0;
  for (const policy::LayerSpec& layer : config.policy.layers) {
    remembers_denials |= layer.lease.has_value();
  }
  out.tenants |= remembers_denials && is_redis_url(config.backend.url);
  if (!config.rls.tenant_key.empty()) {
    if (config.server.grpc_listen.empty()) {
      problems.add("rls.tenant_key",
                   "is for Envoy's services (server.grpc_listen is off): nothing would read it");
    } else {
      out.tenants = true;
    }
  }
  if (!config.backend.tenants_file.empty() && is_redis_url(config.backend.url)) {
    problems.add("backend.tenants_file",
                 "is for the memory backend; with Redis the tenant records live in Redis");
  }
  for (auto [name, value] : {std::pair{"backend.max_batch", config.backend.max_batch},
                             std::pair{"backend.max_in_flight", config.backend.max_in_flight}}) {
    if (value && !is_redis_url(config.backend.url)) {
      problems.add(name,
                   "is for a Redis backend (it batches script calls); the memory backend "
                   "makes none");
    }
  }

  if (config.backend.replica_acks > 0 && !is_redis_url(config.backend.url)) {
    problems.add("backend.durability",
                 "replicated is for a Redis backend (it waits for a Redis replica); the memory "
                 "backend has none");
  }

  // The rules: needed by the gRPC listener, and loaded whenever named (a rules path that does not
  // load is a mistake even while the listener is off: turning it on would fail).
  // (An rls.config written with an error was reported where it was read.)
  if (grpc_on && config.rls.config.empty() && config.lines.of("rls.config") == 0) {
    problems.add("server.grpc_listen",
                 "the gRPC listener needs rules: give --rls-config PATH or rls.config in the "
                 "config file");
    out.usage_error = true;
  }
  if (!config.rls.config.empty()) {
    out.rules_fingerprint = rls::rls_rules_fingerprint(config.rls.config);
    if (auto rules = rls::load_rls_rules(config.rls.config)) {
      out.rules = std::make_shared<const rls::RlsRules>(std::move(*rules));
    } else {
      problems.add("rls.config", rules.error().message);
    }
  }

  out.backend = backend_options(config);
  bool secret_read = true;
  if (!config.backend.key_secret_file.empty()) {
    if (auto secret = read_key_secret(config.backend.key_secret_file)) {
      out.backend.redis.key_hash.secret = std::move(*secret);
      if (auto exposed = exposed_secret_file(config.backend.key_secret_file)) {
        problems.warn("backend.key_secret_file", *exposed);
      }
    } else {
      problems.add("backend.key_secret_file", secret.error().message);
      secret_read = false;
    }
  }
  // The secret's length, whatever the backend (an unreadable file was reported above).
  if (auto digest = KeyDigest::make(out.backend.redis.key_hash); !digest && secret_read) {
    problems.add("backend.key_secret_file", digest.error().message);
  }
  // The URL and TLS files, whatever the secret (checked just above).
  BackendOptions store_options = out.backend;
  store_options.redis.key_hash = {};
  if (auto checked = check_store(config.backend.url, store_options); !checked) {
    // TLS files written in the config are blamed there; otherwise the URL (its tls_* parameters).
    const bool tls_section =
        checked.error().field == "tls" && config.backend.tls && !problems.from_flag("backend.url");
    problems.add(tls_section ? "backend.tls" : "backend.url", checked.error().message);
  }
  return out;
}

std::optional<std::string> rls_tenants_warning(const policy::Config& config) {
  if (config.server.grpc_listen.empty() || !config.rls.tenant_key.empty()) return std::nullopt;
  if (config.server.admin_listen.empty() && !has_store_plans(config)) return std::nullopt;
  return "server.grpc_listen: tenant records apply to POST /v1/check and GET /v1/auth only: "
         "without rls.tenant_key (the descriptor key that carries the caller, e.g. api_key), "
         "Envoy's ShouldRateLimit and RLQS decide by the rls rules alone, and a key blocked "
         "through the admin API is still admitted there";
}

}  // namespace spillway::cli
