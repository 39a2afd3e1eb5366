// The operational endpoints of the Service: GET /metrics (the server's counters, the backend's
// state, the store's and other sources' lines), GET / (an index), GET /healthz, GET /readyz
// (the backend and on_error), GET /v1/stats and GET /dashboard (when server.dashboard is on).
#include <chrono>
#include <cstdint>
#include <string>

#include "spillway/runtime.h"
#include "src/core/json_writer.h"
#include "src/core/metrics_text.h"
#include "src/pages/dashboard_page.h"
#include "src/server/decision_response.h"
#include "src/server/process_metrics.h"
#include "src/server/service.h"
#include "src/server/stats.h"

namespace spillway::server {
namespace {

// The wall clock (CLOCK_REALTIME, as config.loaded_at) in ms since the Unix epoch.
std::int64_t unix_now_ms() { return system_runtime()->now() / 1'000; }

}  // namespace

void Service::metrics_text(const HttpRequest&, const Reply& reply) {
  std::string text = metrics_.render();
  append_metric_family(text, "spillway_backend_status", MetricType::kGauge,
                       "The backend's state now (ready, unreachable, circuit_open).");
  append_metric_sample(text, "spillway_backend_status", {{"status", store_->status()}},
                       std::uint64_t{1});
  store_->append_metrics(text);
  untrusted_forwarders_.append_metrics(text);
  append_process_metrics(text);
  {
    std::lock_guard lock(metrics_sources_mutex_);
    for (const auto& source : metrics_sources_) source(text);
  }
  reply({.body = std::move(text), .content_type = "text/plain; version=0.0.4"});
}

void Service::index(const HttpRequest&, const Reply& reply) {
  std::string body =
      "spillway " SPILLWAY_VERSION
      " - a rate limiter\n\n"
      "POST /v1/check     decide a request by the policy's layers (JSON attributes)\n"
      "POST /v1/limit     decide one key against a limit given in the request\n"
      "GET  /v1/auth      nginx auth_request (headers, no body): 204 admitted; 403 denied "
      "(nginx's\n"
      "                   error_page 403 =429 turns it into 429); 401 X-API-Key missing when a\n"
      "                   layer reads api_key; 400 X-Original-URI missing or a bad header\n"
      "POST /v1/commit    settle a reservation (\"reserve\": true) with the actual cost\n"
      "POST /v1/cancel    give a reservation's whole estimate back\n"
      "GET  /metrics      Prometheus metrics\n"
      "GET  /healthz      liveness\n"
      "GET  /readyz       readiness (503 while checks fail or tenant records are not loaded)\n";
  if (settings()->dashboard) {
    body.append(
        "GET  /v1/stats     live counters as JSON\n"
        "GET  /dashboard    the live dashboard\n");
  }
  reply({.body = std::move(body), .content_type = "text/plain; charset=utf-8"});
}

void Service::healthz(const HttpRequest&, const Reply& reply) {
  std::string body;
  JsonWriter(body).begin_object().member("status", "ok").end_object();
  reply({.body = std::move(body)});
}

void Service::readyz(const HttpRequest&, const Reply& reply) {
  // The store's ready() follows the backend's probes and its circuit (a check would work), not
  // whether a socket is open. The reason stays a word: the probe's error (addresses, Redis'
  // text) is in the log, not on a port that callers may reach.
  const bool backend_ready = store_->ready();
  const bool tenants_ready = tenants_ == nullptr || tenants_->ready();
  const bool ready = backend_ready && tenants_ready;
  // on_error says what requests get meanwhile: with allow they are admitted unchecked.
  const std::string_view on_error = policy::on_error_name(settings()->on_error);
  std::string body;
  JsonWriter json(body);
  json.begin_object().member("status", ready ? "ready" : "not ready");
  if (!ready) {
    json.member("error", backend_ready ? "tenant records not loaded" : "backend unreachable");
  }
  json.member("backend", store_->status()).member("on_error", on_error).end_object();
  reply({.status = ready ? 200 : 503, .body = std::move(body)});
}

void Service::stats(const HttpRequest&, const Reply& reply) {
  const std::shared_ptr<const Settings> current = settings();
  if (!current->dashboard) {
    return reply(error_response(404, "no such endpoint: /v1/stats (server.dashboard is off)"));
  }
  const Metrics::Snapshot snapshot = metrics_.snapshot();
  StatsView view{.metrics = &snapshot,
                 .top_denied = top_denied_.top(10),
                 .mask_keys = current->mask_keys,
                 .mask_salt = mask_salt_,
                 .backend_kind = current->backend_kind,
                 .backend_status = store_->status(),
                 .backend_up = store_->ready(),
                 .config_version = current->version,
                 .config_loaded_at = iso8601_utc(current->loaded_at),
                 .layers = {},
                 .uptime_s = std::chrono::duration<double>(started_.elapsed()).count(),
                 .now_unix_ms = unix_now_ms(),
                 .version = SPILLWAY_VERSION};
  for (const policy::LayerSpec& layer : current->policy->spec().layers) {
    view.layers.emplace_back(layer.name,
                             layer.mode == policy::LayerMode::kShadow ? "shadow" : "enforce");
  }
  HttpResponse response{.body = stats_json(view)};
  response.headers.emplace_back("Cache-Control", "no-store");
  reply(std::move(response));
}

void Service::dashboard(const HttpRequest&, const Reply& reply) {
  if (!settings()->dashboard) {
    return reply(error_response(404, "no such endpoint: /dashboard (server.dashboard is off)"));
  }
  HttpResponse response{.body = std::string(pages::dashboard_html()),
                        .content_type = "text/html; charset=utf-8"};
  // The page inlines everything and fetches only /v1/stats from here.
  response.headers.emplace_back("Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; "
                                "style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
  response.headers.emplace_back("Cache-Control", "no-store");
  reply(std::move(response));
}

}  // namespace spillway::server
