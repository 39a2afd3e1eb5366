#include "src/cli/serve.h"

#include <signal.h>

#include <iostream>

#include "spillway/open_store.h"
#include "src/cli/args.h"
#include "src/policy/config.h"
#include "src/policy/listen_address.h"
#include "src/server/http_server.h"
#include "src/server/service.h"

namespace spillway::cli {
namespace {

// "host:port" or "[v6]:port" (--listen, or the config's server.listen) into the server options,
// by the config's own rules (policy::parse_listen_address): port 0 is any free port.
Result<void> parse_listen(const std::string& listen, server::HttpServerOptions& options) {
  Result<policy::ListenAddress> address = policy::parse_listen_address(listen);
  if (!address) return std::unexpected(address.error());
  options.host = std::move(address->host);
  options.port = address->port;
  return {};
}

}  // namespace

int run_serve(int argc, char** argv, int first, std::ostream& err) {
  auto args = Args::parse(argc, argv, first, {"config", "listen", "backend"});
  if (!args) {
    err << "spillway serve: " << args.error().message << "\n";
    return 2;
  }
  if (!args->positional().empty()) {
    err << "spillway serve: unexpected argument \"" << args->positional()[0] << "\"\n";
    return 2;
  }
  const std::optional<std::string> config_path = args->get("config");
  auto config = config_path ? policy::load_config_file(*config_path) : policy::default_config();
  if (!config) {
    err << "spillway serve: " << (config_path ? *config_path + ": " : "") << config.error().message
        << "\n";
    return 1;
  }
  if (auto backend = args->get("backend")) config->backend.url = *backend;
  if (auto listen = args->get("listen")) config->server.listen = *listen;
  server::HttpServerOptions http;
  if (auto ok = parse_listen(config->server.listen, http); !ok) {
    err << "spillway serve: " << (args->has("listen") ? "--listen: " : "server.listen: ")
        << ok.error().message << "\n";
    return 2;
  }
  http.threads = config->server.threads;
  http.log_requests = config->server.access_log;

  // Signals go to this thread only (sigwait below): block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::optional<RedisTlsOptions> tls;
  if (const auto& t = config->backend.tls) {
    tls = RedisTlsOptions{.ca_file = t->ca_file,
                          .cert_file = t->cert_file,
                          .key_file = t->key_file,
                          .server_name = t->server_name,
                          .insecure = t->insecure};
  }
  auto store = open_store(config->backend.url,
                          {.redis = {.key_prefix = config->backend.key_prefix,
                                     .timeout = config->backend.timeout,
                                     .tls = std::move(tls)},
                           .breaker = {.failures = config->backend.breaker_failures,
                                       .probe_interval = config->backend.breaker_probe},
                           .local_fallback = config->backend.on_error == policy::OnError::kLocal});
  if (!store) {
    err << "spillway serve: backend \"" << config->backend.url << "\": " << store.error().message
        << "\n";
    return 1;
  }
  auto service = server::Service::make(*config, std::move(*store));
  if (!service) {
    err << "spillway serve: " << service.error().message << "\n";
    return 1;
  }
  server::Service* handler = service->get();
  auto http_server = server::HttpServer::start(
      http, [handler](server::HttpRequest request, server::Responder respond) {
        handler->handle(std::move(request), std::move(respond));
      });
  if (!http_server) {
    err << "spillway serve: " << http_server.error().message << "\n";
    return 1;
  }
  err << "spillway serve: listening on " << http.host << ":" << (*http_server)->port()
      << " (backend " << config->backend.url << ", " << config->policy.layers.size() << " layers)"
      << std::endl;

  while (true) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal == SIGHUP) {
      if (!config_path) {
        err << "spillway serve: SIGHUP: no --config to reload; keeping the built-in policy"
            << std::endl;
        continue;
      }
      auto fresh = policy::load_config_file(*config_path);
      auto reloaded =
          fresh ? (*service)->reload(*fresh) : Result<void>(std::unexpected(fresh.error()));
      if (reloaded) {
        err << "spillway serve: reloaded " << *config_path << std::endl;
        // on_error between allow and deny is swapped by reload(); everything else in the
        // backend section (local included: it changes the store) waits for a restart.
        policy::BackendConfig compared = fresh->backend;
        if (compared.on_error != policy::OnError::kLocal &&
            config->backend.on_error != policy::OnError::kLocal) {
          compared.on_error = config->backend.on_error;
        }
        if (compared != config->backend) {
          err << "spillway serve: the backend section changed; it takes effect at the next "
                 "restart (still using "
              << config->backend.url << ")" << std::endl;
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
    (*http_server)->stop(std::chrono::seconds(10));
    return 0;
  }
}

}  // namespace spillway::cli
