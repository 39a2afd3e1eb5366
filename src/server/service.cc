// The Service itself: its settings (built from a config, swapped on reload, read through a
// per-thread cache), the route table and the reply that counts every answer. The endpoints are
// in service_decisions.cc (/v1/check, /v1/auth, /v1/limit) and service_ops.cc (/metrics,
// /healthz, /readyz, /v1/stats, /dashboard, /).
#include "src/server/service.h"

#include <atomic>
#include <chrono>
#include <random>

#include "spillway/runtime.h"
#include "src/core/backend_schemes.h"
#include "src/core/metrics_text.h"
#include "src/core/stopwatch.h"
#include "src/server/decision_response.h"

namespace spillway::server {
using policy::Policy;
namespace {}  // namespace

Result<std::shared_ptr<Service::Settings>> Service::build(const policy::Config& config) const {
  auto built = Policy::make(config.policy, tenants_, config.tenants.until_loaded);
  if (!built) return std::unexpected(built.error());
  auto settings = std::make_shared<Settings>();
  settings->policy = *built;
  settings->trusted_proxies = config.server.trusted_proxies;
  settings->client_ip_header = config.server.client_ip_header;
  settings->ipv6_prefix = config.server.ipv6_prefix;
  settings->on_error = config.backend.on_error;
  settings->dashboard = config.server.dashboard;
  settings->mask_keys = config.server.dashboard_mask_keys;
  settings->reject_unknown_attributes = config.server.reject_unknown_attributes;
  settings->reservation_ttl = config.server.reservation_ttl;
  const BackendScheme* scheme = find_backend_scheme(config.backend.url);
  settings->backend_kind = scheme != nullptr
                               ? std::string(scheme->name)
                               : config.backend.url.substr(0, config.backend.url.find("://"));
  settings->loaded_at = system_runtime()->now() / 1'000'000;  // s since the epoch
  return settings;
}

namespace {
std::atomic<std::uint64_t> next_service_id{1};
}  // namespace

Service::Service(std::unique_ptr<Store> store, std::shared_ptr<const TenantDirectory> tenants)
    : store_(std::move(store)),
      tenants_(std::move(tenants)),
      id_(next_service_id.fetch_add(1, std::memory_order_relaxed)),
      mask_salt_((static_cast<std::uint64_t>(std::random_device()()) << 32) ^
                 std::random_device()()) {}

Result<std::unique_ptr<Service>> Service::make(const policy::Config& config,
                                               std::unique_ptr<Store> store,
                                               std::shared_ptr<const TenantDirectory> tenants) {
  std::unique_ptr<Service> service(new Service(std::move(store), std::move(tenants)));
  auto settings = service->build(config);
  if (!settings) return std::unexpected(settings.error());
  service->settings_ = *settings;
  service->log_json_ = config.server.log_json;
  service->held_.set_capacity(static_cast<std::size_t>(config.server.max_delayed));
  Service* held_by = service.get();
  service->add_metrics_source([held_by](std::string& out) {
    append_metric_family(out, "spillway_delayed_held", MetricType::kGauge,
                         "GET /v1/auth answers held now for their delay (at most "
                         "server.max_delayed).");
    append_metric_sample(out, "spillway_delayed_held", {},
                         static_cast<std::uint64_t>(held_by->held_.held()));
  });
  return service;
}

Result<void> Service::reload(const policy::Config& config) {
  auto settings = build(config);
  if (!settings) return std::unexpected(settings.error());
  std::lock_guard lock(settings_mutex_);
  (*settings)->version = settings_->version + 1;
  (*settings)->backend_kind = settings_->backend_kind;  // the store changes only at a restart
  settings_ = *settings;
  settings_version_.fetch_add(1, std::memory_order_release);
  held_.set_capacity(static_cast<std::size_t>(config.server.max_delayed));
  store_->clear_caches();  // limits may have changed: forget remembered denials
  return {};
}

const std::shared_ptr<const Service::Settings>& Service::settings() const {
  // This thread's copy, refreshed when a reload changed the version: a request takes no lock
  // and touches no shared reference count.
  struct Cache {
    std::uint64_t service = 0;
    std::uint64_t version = 0;
    std::shared_ptr<const Settings> settings;
  };
  thread_local Cache cache;
  if (cache.service != id_ || cache.version != settings_version_.load(std::memory_order_acquire)) {
    std::lock_guard lock(settings_mutex_);
    cache.settings = settings_;
    cache.version = settings_version_.load(std::memory_order_relaxed);
    cache.service = id_;
  }
  return cache.settings;
}

void Service::Reply::operator()(HttpResponse response) const {
  count(response.status);
  send(std::move(response));
}

void Service::Reply::count(int status) const {
  service->metrics_.request(endpoint, status, started.elapsed().count());
}

// HEAD is allowed wherever GET is: the connection sends the headers without the body.
const Service::Route Service::kRoutes[] = {
    {"/v1/check", "POST", &Service::check},
    {"/v1/limit", "POST", &Service::limit},
    {"/v1/auth", "GET, HEAD", &Service::auth},
    {"/v1/commit", "POST", &Service::commit},
    {"/v1/cancel", "POST", &Service::cancel},
    {"/v1/release", "POST", &Service::release},
    {"/metrics", "GET, HEAD", &Service::metrics_text},
    {"/healthz", "GET, HEAD", &Service::healthz},
    {"/readyz", "GET, HEAD", &Service::readyz},
    {"/v1/stats", "GET, HEAD", &Service::stats},
    {"/dashboard", "GET, HEAD", &Service::dashboard},
    {"/", "GET, HEAD", &Service::index},
};

const Service::Route* Service::route_of(std::string_view path) {
  RouteCaptures none;  // every route is an exact path
  return find_route(kRoutes, path, none);
}

std::string_view Service::label_of(std::string_view path, const Route* route) {
  if (route != nullptr) return route->path;
  return path.starts_with("/v1/") ? "/v1/other" : "other";
}

std::string Service::logged_path(std::string_view path) {
  path = target_path(path);
  if (path == "-") return "-";  // a request line that could not be read
  return std::string(label_of(path, route_of(path)));
}

void Service::handle(HttpRequest request, Responder respond) {
  const std::string_view path = target_path(request.target);
  const Route* route = route_of(path);
  const std::string_view label = label_of(path, route);
  const Reply reply{this, label, Stopwatch(), std::move(respond)};
  if (route == nullptr) {
    return reply(error_response(404, "no such endpoint: " + std::string(path)));
  }
  if (auto refused = refuse_method(*route, request.method, path)) {
    return reply(std::move(*refused));
  }
  (this->*route->handler)(request, reply);
}

}  // namespace spillway::server
