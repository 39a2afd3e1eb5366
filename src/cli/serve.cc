#include "src/cli/serve.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <iostream>
#include <map>

#include "spillway/open_store.h"
#include "src/cli/args.h"
#include "src/cli/backend_watch.h"
#include "src/cli/json_stderr.h"
#include "src/cli/preflight.h"
#include "src/config/config.h"
#include "src/config/listen_address.h"
#include "src/core/backend_schemes.h"
#include "src/core/metrics_text.h"
#include "src/grpc/grpc_metrics.h"
#include "src/grpc/rls_grpc_server.h"
#include "src/open_store/open_quota_shares.h"
#include "src/redis/storage_key.h"
#include "src/rls/rls_engine.h"
#include "src/rls/rls_watcher.h"
#include "src/server/http_server.h"
#include "src/server/service.h"

namespace spillway::cli {
namespace {

// A sink that writes each line after `prefix` on stderr in one write(2): safe from any thread (the
// tenant follower's, the runtime's (the rules poll), the admin listener's), never interleaved.
std::function<void(const std::string&)> stderr_lines(std::string prefix) {
  return [prefix = std::move(prefix)](const std::string& line) {
    const std::string text = prefix + line + "\n";
    (void)!::write(2, text.data(), text.size());
  };
}

// Envoy's paths read tenant records when rls.tenant_key names the descriptor key that carries a
// caller, spelt as the policy in force spells a record's key (the service outlives the engine).
rls::TenantGate rls_tenant_gate(const std::string& descriptor_key,
                                const std::shared_ptr<TenantDirectory>& tenants,
                                const server::Service* service) {
  if (descriptor_key.empty() || !tenants) return {};
  return {.tenants = tenants,
          .descriptor_key = descriptor_key,
          .spell = [service](std::string_view value) {
            return service->current_policy()->tenant_key(value, service->ipv6_prefix());
          }};
}

// "spillway serve: <text>" and its newline in one write, flushed: a reader of the log (another
// process, while this one runs) never sees half a line.
void log_line(std::ostream& err, const std::string& text) {
  err << ("spillway serve: " + text + "\n") << std::flush;
}

}  // namespace

int run_serve(int argc, char** argv, int first, std::ostream& err) {
  auto args =
      Args::parse(argc, argv, first,
                  {"config", "listen", "backend", "grpc-listen", "rls-config", "require-backend"},
                  {"require-backend"});
  if (!args) {
    err << "spillway serve: " << args.error().message << "\n";
    return 2;
  }
  if (!args->positional().empty()) {
    err << "spillway serve: unexpected argument \"" << args->positional()[0] << "\"\n";
    return 2;
  }
  const std::optional<std::string> config_path = args->get("config");
  std::optional<policy::Config> config = load_command_config("serve", config_path, err);
  if (!config) return 1;
  if (auto backend = args->get("backend")) config->backend.url = *backend;
  if (auto listen = args->get("listen")) config->server.listen = *listen;
  if (auto grpc = args->get("grpc-listen")) config->server.grpc_listen = *grpc;
  if (auto rules = args->get("rls-config")) config->rls.config = *rules;
  if (args->has("require-backend")) config->backend.require_at_start = true;
  // Everything that can be checked before binding and connecting, as `spillway validate` does.
  std::map<std::string, std::string> flags;
  for (const auto& [flag, path] :
       {std::pair{"backend", "backend.url"}, std::pair{"listen", "server.listen"},
        std::pair{"grpc-listen", "server.grpc_listen"}, std::pair{"rls-config", "rls.config"}}) {
    if (args->has(flag)) flags[path] = std::string("--") + flag;
  }
  Preflight checked = preflight(*config, config_path.value_or(""), flags);
  if (!checked.errors.empty()) {
    for (const std::string& line : checked.errors) err << "spillway serve: " << line << "\n";
    return checked.usage_error ? 2 : 1;
  }
  for (const std::string& line : checked.warnings)
    err << "spillway serve: warning: " << line << "\n";
  const std::optional<policy::ListenAddress> grpc_address = checked.grpc_listen;
  const std::shared_ptr<const rls::RlsRules> rules = checked.rules;
  const std::string rules_fingerprint = checked.rules_fingerprint;
  server::HttpServerOptions http;
  http.host = checked.listen.host;
  http.port = checked.listen.port;
  http.threads = config->server.threads;
  http.log_requests = config->server.access_log;
  http.log_json = config->server.log_json;
  http.logged_path = &server::Service::logged_path;  // never a path as sent: it may hold a key
  http.max_connections_per_peer = config->server.max_connections_per_peer;
  http.tls = checked.tls;

  // Signals go to this thread only (sigwait below): block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // server.log_format: json: from here on every stderr line is a JSON object (the relay goes
  // last, after every thread that writes to it).
  std::unique_ptr<JsonStderr> json_log;
  if (config->server.log_json) json_log = JsonStderr::start();

  // The options preflight checked (the key secret read from its file among them).
  const std::chrono::milliseconds connect_timeout = checked.backend.redis.connect_timeout;
  const BackendOptions backend_options = checked.backend;
  auto store = open_store(config->backend.url, std::move(checked.backend));
  if (!store) {
    err << "spillway serve: backend \"" << printable_url(config->backend.url)
        << "\": " << store.error().message << "\n";
    return 1;
  }
  // The first connection and a probe check (Store::probe: authentication, the script, a write)
  // before the first request: a request that came earlier would be answered by on_error,
  // uncharged. A backend that does not answer is said once, loudly, with why.
  const Result<void> answering = (*store)->wait_ready(connect_timeout);
  if (!answering) {
    if (config->backend.require_at_start) {
      err << "spillway serve: "
          << not_answering_line(config->backend.url, answering.error().message) << "; "
          << (args->has("require-backend") ? "--require-backend" : "backend.require_at_start")
          << ": not starting" << std::endl;
      return 1;
    }
    err << "spillway serve: "
        << not_answering_line(config->backend.url, answering.error().message,
                              config->backend.on_error)
        << std::endl;
  }
  // Tenant records, when a layer reads them or the admin API writes them: on Redis, loaded before
  // the first request (or said, once, that they are not yet).
  std::shared_ptr<TenantDirectory> tenants;
  if (checked.tenants) {
    auto opened = open_tenants(
        config->backend.url, backend_options,
        {.file = config->backend.tenants_file, .log = stderr_lines("spillway serve: ")});
    if (!opened) {
      err << "spillway serve: tenant records: " << opened.error().message << "\n";
      return 1;
    }
    tenants = std::move(*opened);
    // A backend that answered a check gets time to hand a large directory over (a million
    // records take seconds); one that did not was given its time already: no more wait, the
    // copy loads in the background and /readyz says not ready until it has.
    const std::chrono::milliseconds load_wait =
        answering ? std::max<std::chrono::milliseconds>(connect_timeout, std::chrono::seconds(30))
                  : std::chrono::milliseconds(0);
    if (!tenants->wait_ready(load_wait)) {
      if (config->backend.require_at_start) {
        err << "spillway serve: tenant records not loaded from the backend within "
            << load_wait.count() << " ms; "
            << (args->has("require-backend") ? "--require-backend" : "backend.require_at_start")
            << ": not starting" << std::endl;
        return 1;
      }
      err << "spillway serve: tenant records not loaded from the backend yet; until they are, "
          << (config->tenants.until_loaded == policy::UntilLoaded::kDeny
                  ? "requests on source: store layers are denied (503) and /readyz says not "
                    "ready (tenants.until_loaded: deny)"
                  : "callers get their file plan or the default, blocked callers are not "
                    "blocked, and /readyz says not ready (tenants.until_loaded: defaults)")
          << std::endl;
    }
  }
  // SIGHUP reloads of the main config, by outcome (declared before the service that reads them).
  std::atomic<std::uint64_t> reloads_succeeded{0};
  std::atomic<std::uint64_t> reloads_failed{0};
  auto service = server::Service::make(*config, std::move(*store), tenants);
  if (!service) {
    err << "spillway serve: " << service.error().message << "\n";
    return 1;
  }
  server::Service* handler = service->get();
  (*service)->add_metrics_source([&reloads_succeeded, &reloads_failed](std::string& out) {
    append_metric_family(out, "spillway_config_reloads_total", MetricType::kCounter,
                         "SIGHUP reloads of the main config (--config), by result.");
    append_metric_sample(out, "spillway_config_reloads_total", {{"result", "success"}},
                         reloads_succeeded.load(std::memory_order_relaxed));
    append_metric_sample(out, "spillway_config_reloads_total", {{"result", "failure"}},
                         reloads_failed.load(std::memory_order_relaxed));
  });
  auto http_server = server::HttpServer::start(
      http, [handler](server::HttpRequest request, server::Responder respond) {
        handler->handle(std::move(request), std::move(respond));
      });
  if (!http_server) {
    err << "spillway serve: " << http_server.error().message << "\n";
    return 1;
  }

  // A counter reset made through any instance: forget the denials this one remembers. The
  // listener is taken away before the service (and its store) goes.
  struct ResetListener {
    std::shared_ptr<TenantDirectory> tenants;
    ~ResetListener() {
      if (tenants) tenants->on_reset(nullptr);
    }
  } reset_listener{tenants};
  if (tenants) {
    (*service)->add_metrics_source([tenants](std::string& out) { tenants->append_metrics(out); });
    Store* reset_store = &(*service)->store();
    tenants->on_reset([reset_store] { reset_store->clear_caches(); });
  }
  // The admin API: its own listener and tokens, never the decision port.
  std::unique_ptr<server::AdminService> admin;
  std::unique_ptr<server::HttpServer> admin_server;
  if (checked.admin_listen) {
    // GET /v1/inspect names the backend and, on Redis, the key names as `spillway inspect` does.
    server::InspectBackend inspect_backend{.url = printable_url(config->backend.url)};
    const BackendScheme* backend_scheme = find_backend_scheme(config->backend.url);
    if (backend_scheme != nullptr && backend_scheme->kind != BackendKind::kMemory) {
      const RedisStoreOptions& redis = backend_options.redis;
      inspect_backend.key_names = std::string(key_hash_name(redis.key_hash.hash));
      if (Result<KeyDigest> digest = KeyDigest::make(redis.key_hash)) {
        inspect_backend.stored_name = [prefix = redis.key_prefix, digest = std::move(*digest)](
                                          std::string_view key, const Limit& limit) {
          return redis::storage_key(prefix, digest, key, limit);
        };
      }
    }
    admin = std::make_unique<server::AdminService>(
        tenants, (*service)->store(), std::move(checked.admin_tokens),
        [handler] { return handler->current_policy(); }, stderr_lines("spillway audit: "),
        [handler] { return handler->ipv6_prefix(); }, std::move(inspect_backend));
    server::HttpServerOptions options;
    options.host = checked.admin_listen->host;
    options.port = checked.admin_listen->port;
    options.threads = 1;
    options.max_body_bytes = server::AdminService::kMaxBodyBytes;
    // The decision port's deadlines: 5 s to the first byte and to a whole header, 5 s idle; only
    // a request whose token check passed gets longer for its body (an import).
    options.idle_timeout = options.read_timeout;
    options.body_timeout = std::chrono::seconds(120);
    options.max_connections_per_peer = config->server.admin_max_connections_per_peer;
    options.evict_idle_when_full = true;  // an idle flood from many addresses
    options.tls = checked.tls;
    options.log_requests = config->server.access_log;
    options.log_json = config->server.log_json;
    options.logged_path = &server::AdminService::logged_path;
    options.max_connections = server::AdminService::kMaxConnections;
    server::AdminService* admin_handler = admin.get();
    options.check_headers = [admin_handler](const server::HttpRequest& request) {
      return admin_handler->check_headers(request);
    };
    auto started = server::HttpServer::start(
        options, [admin_handler](server::HttpRequest request, server::Responder respond) {
          admin_handler->handle(std::move(request), std::move(respond));
        });
    if (!started) {
      err << "spillway serve: admin API: " << started.error().message << std::endl;
      (*http_server)->stop(std::chrono::seconds(0));
      return 1;
    }
    admin_server = std::move(*started);
  }

  // Envoy's rate limit service: same store, its own rules, its own listener.
  std::unique_ptr<rls::RlsEngine> engine;
  std::unique_ptr<rls::RlsWatcher> watcher;
  grpc_server::GrpcMetrics grpc_metrics;
  std::unique_ptr<grpc_server::RlsGrpcServer> grpc;
  if (grpc_address) {
    engine = std::make_unique<rls::RlsEngine>(
        (*service)->store(), rules,
        rls::RlsOptions{.charge_on_deny = config->rls.charge_on_deny,
                        .response_headers = config->rls.response_headers,
                        .tenants = rls_tenant_gate(config->rls.tenant_key, tenants, handler)});
    Store* shared_store = &(*service)->store();
    watcher = std::make_unique<rls::RlsWatcher>(*engine, config->rls.config, rules_fingerprint,
                                                config->rls.watch, stderr_lines("spillway serve: "),
                                                [shared_store] { shared_store->clear_caches(); });
    // RLQS: the Envoys' demands meet in the backend, so every server shares a bucket fairly.
    auto shares = open_quota_shares(config->backend.url, backend_options);
    if (!shares) {
      err << "spillway serve: rlqs shares: " << shares.error().message << std::endl;
      (*http_server)->stop(std::chrono::seconds(0));
      return 1;
    }
    auto started = grpc_server::RlsGrpcServer::start(
        {.host = grpc_address->host,
         .port = grpc_address->port,
         .on_error = config->rls.on_error,
         .ready = [shared_store] { return shared_store->ready(); },
         .tls = config->server.tls,
         .quota_shares = std::move(*shares),
         .log_calls = config->server.access_log && config->server.log_json},
        *engine, grpc_metrics);
    if (!started) {  // before anything said "listening"
      err << "spillway serve: " << started.error().message << std::endl;
      (*http_server)->stop(std::chrono::seconds(0));
      return 1;
    }
    grpc = std::move(*started);
    rls::RlsEngine* engine_ptr = engine.get();
    rls::RlsWatcher* watcher_ptr = watcher.get();
    grpc_server::RlsGrpcServer* grpc_ptr = grpc.get();
    (*service)->add_metrics_source(
        [engine_ptr, watcher_ptr, grpc_ptr, &grpc_metrics](std::string& out) {
          engine_ptr->stats().render(out);
          watcher_ptr->render(out);
          grpc_metrics.render(out);
          grpc_ptr->append_quota_metrics(out);
        });
  }
  // Both listeners are bound: now they may be announced.
  err << "spillway serve: listening on " << http.host << ":" << (*http_server)->port()
      << " (backend " << printable_url(config->backend.url) << ", " << config->policy.layers.size()
      << " layers)" << std::endl;
  if (grpc) {
    if (const std::optional<std::string> warning = rls_tenants_warning(*config)) {
      err << "spillway serve: warning: " << *warning << std::endl;
    }
    err << "spillway serve: gRPC rate limit service listening on " << grpc_address->host << ":"
        << grpc->port() << " (" << rules->domains.size() << " domains from " << config->rls.config
        << ")" << std::endl;
  }
  if (admin_server) {
    err << "spillway serve: admin API listening on " << checked.admin_listen->host << ":"
        << admin_server->port() << " (" << tenants->size() << " tenant records)" << std::endl;
    err << "spillway serve: admin tokens: " << admin->token_count() << " in force from "
        << config->server.admin_token_file << std::endl;
  }
  if (checked.tls) {
    err << "spillway serve: TLS on every listener (certificate " << config->server.tls->cert_file
        << (config->server.tls->client_ca_file.empty()
                ? std::string(")")
                : "; client certificates required, from " + config->server.tls->client_ca_file +
                      ")")
        << std::endl;
  }
  // From here on, a line each time the backend stops or starts answering.
  std::optional<BackendWatch> backend_watch;
  const BackendScheme* scheme = find_backend_scheme(config->backend.url);
  if (scheme == nullptr || scheme->kind != BackendKind::kMemory) {
    backend_watch.emplace((*service)->store(), config->backend.url, config->backend.on_error,
                          answering.has_value());
  }

  while (true) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal == SIGHUP) {
      if (watcher) (void)watcher->reload();  // logs its own outcome
      if (checked.tls) {  // new connections get the new certificate; gRPC keeps its own
        if (auto reloaded = checked.tls->reload()) {
          log_line(err,
                   "TLS certificate reloaded from " + config->server.tls->cert_file +
                       (grpc ? " (the gRPC listener keeps its certificate until a restart)" : ""));
        } else {
          log_line(err, "TLS certificate not reloaded, keeping the one in force: " +
                            reloaded.error().message);
        }
      }
      if (admin) {  // the token file of the start: a removed token is refused from now on
        const std::string& file = config->server.admin_token_file;
        if (auto count = admin->reload_tokens(file)) {
          log_line(err, "admin tokens reloaded from " + file + ": " + std::to_string(*count) +
                            " in force");
        } else {
          log_line(err, "admin tokens not reloaded, keeping the " +
                            std::to_string(admin->token_count()) +
                            " in force: " + count.error().message);
        }
      }
      if (!config_path) {
        err << "spillway serve: SIGHUP: no --config to reload; keeping the built-in policy"
            << std::endl;
        continue;
      }
      auto fresh = policy::load_config_file(*config_path);
      auto reloaded =
          fresh ? (*service)->reload(*fresh) : Result<void>(std::unexpected(fresh.error()));
      (reloaded ? reloads_succeeded : reloads_failed).fetch_add(1, std::memory_order_relaxed);
      if (reloaded) {
        err << "spillway serve: reloaded " << *config_path << std::endl;
        // on_error between allow and deny is swapped by reload(); everything else in the
        // backend section (local included: it changes the store) waits for a restart.
        policy::BackendConfig compared = fresh->backend;
        if (compared.on_error != policy::OnError::kLocal &&
            config->backend.on_error != policy::OnError::kLocal) {
          compared.on_error = config->backend.on_error;
        }
        if (fresh->rls != config->rls || fresh->server.grpc_listen != config->server.grpc_listen) {
          err << "spillway serve: the rls section and server.grpc_listen changed; they take "
                 "effect at the next restart (the rules files themselves reload now)"
              << std::endl;
        }
        if (fresh->server.admin_listen != config->server.admin_listen ||
            fresh->server.admin_token_file != config->server.admin_token_file) {
          err << "spillway serve: server.admin_listen and server.admin_token_file take effect at "
                 "the next restart (the admin API keeps its listener and reloads the token "
                 "file it started with)"
              << std::endl;
        }
        if (!tenants) {
          for (const policy::LayerSpec& layer : fresh->policy.layers) {
            if (layer.by_plan && layer.by_plan->source == policy::PlanSource::kStore) {
              err << "spillway serve: layer " << layer.name
                  << " has source: store, but this process started without tenant records; "
                     "it uses the file's plans until the next restart"
                  << std::endl;
            }
          }
        }
        if (compared != config->backend) {
          err << "spillway serve: the backend section changed; it takes effect at the next "
                 "restart (still using "
              << printable_url(config->backend.url) << ")" << std::endl;
        }
      } else {
        err << "spillway serve: reload of " << *config_path
            << " rejected, still serving the previous config: " << reloaded.error().message
            << std::endl;
      }
      continue;
    }
    err << "spillway serve: " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
        << ": draining and stopping" << std::endl;
    // Answers held for their delay go now, while their connections are open.
    if (const std::size_t held = handler->release_held(); held > 0) {
      err << "spillway serve: sent " << held
          << " delayed /v1/auth answer(s) before their time (admitted, "
             "X-Spillway-Released: shutdown)"
          << std::endl;
    }
    if (grpc) grpc->stop(std::chrono::seconds(5));
    if (admin_server) admin_server->stop(std::chrono::seconds(5));
    (*http_server)->stop(std::chrono::seconds(10));
    return 0;
  }
}

}  // namespace spillway::cli
