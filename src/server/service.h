// What spillway's HTTP endpoints mean (docs/SPEC.md §5): POST /v1/limit, POST /v1/check, GET
// /v1/auth, GET /metrics, GET /healthz, GET /readyz, GET /v1/stats, GET /dashboard and GET / (an
// index of these); HEAD wherever GET. Bad input
// gets a 4xx whose JSON names the problem and changes no limiter state; backend errors follow
// `on_error`.
//
// One class over three files: service.cc (settings, reload, routing, the reply that counts each
// answer), service_decisions.cc (/v1/check, /v1/auth, /v1/limit: the policy or the store decides)
// and service_ops.cc (/metrics, /healthz, /readyz, /v1/stats, /dashboard, /).
//
// Thread safety: handle() may run on many threads at once. reload() swaps the policy atomically;
// requests already running finish on the policy they started with.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "spillway/policy_engine.h"
#include "spillway/store.h"
#include "src/config/config.h"
#include "src/core/rate_limited_log.h"
#include "src/core/stopwatch.h"
#include "src/server/held_replies.h"
#include "src/server/http_server.h"
#include "src/server/metrics.h"
#include "src/server/router.h"
#include "src/server/top_keys.h"
#include "src/server/untrusted_forwarders.h"

namespace spillway::server {

// The attributes GET /v1/auth builds from a request: the client address, X-API-Key,
// X-Original-URI and X-Original-Method. A layer reading any other attribute can only be met on
// POST /v1/check (`spillway validate` warns of it).
inline constexpr std::string_view kAuthAttributes[] = {"ip", "api_key", "endpoint", "method"};
// "ip, api_key, endpoint, method": kAuthAttributes for messages.
std::string auth_attributes_text();

class Service {
 public:
  // The store is shared with nothing else; the config's server and backend sections apply.
  // `tenants`: the records by_plan layers with `source: store` read (shared with the admin API);
  // may be null (then such layers use the file's assignments and default).
  static Result<std::unique_ptr<Service>> make(const policy::Config& config,
                                               std::unique_ptr<Store> store,
                                               std::shared_ptr<const TenantDirectory> tenants = {});

  void handle(HttpRequest request, Responder respond);

  // What the access log shows as a request's path (HttpServerOptions::logged_path): an endpoint's
  // path, or the metrics label of an unknown one ("/v1/other", "other"), never the path as sent,
  // which may hold a caller's key (an admin path sent here, a key pasted into a URL).
  static std::string logged_path(std::string_view path);

  // Swaps in a new policy (layers, plans, trusted proxies, on_error). A config that does not
  // build is rejected and the old one keeps serving.
  Result<void> reload(const policy::Config& config);

  Metrics& metrics() { return metrics_; }
  // The policy in force now (the admin API checks records against it).
  std::shared_ptr<const policy::Policy> current_policy() const { return settings()->policy; }
  // server.ipv6_prefix in force: how an "ip" attribute is keyed.
  int ipv6_prefix() const { return settings()->ipv6_prefix; }
  // The store the endpoints decide on (the gRPC listener shares it).
  Store& store() { return *store_; }
  // Adds text to GET /metrics (Prometheus lines), e.g. the gRPC listener's. Any time, any
  // thread; `source` must stay valid while the Service lives.
  void add_metrics_source(std::function<void(std::string&)> source) {
    std::lock_guard lock(metrics_sources_mutex_);
    metrics_sources_.push_back(std::move(source));
  }
  // Shutdown: sends every GET /v1/auth answer held for its delay now (admitted, with
  // X-Spillway-Released: shutdown), and later ones at once. Returns how many were held.
  std::size_t release_held();

 private:
  struct Settings {
    std::shared_ptr<const policy::Policy> policy;
    std::vector<policy::Cidr> trusted_proxies;
    policy::ClientIpHeader client_ip_header = policy::ClientIpHeader::kXForwardedFor;
    int ipv6_prefix = 64;
    policy::OnError on_error = policy::kDefaultOnError;  // build() sets the config's
    bool dashboard = true;
    bool mask_keys = true;
    bool reject_unknown_attributes = true;  // POST /v1/check: 400 for attributes no layer reads
    std::chrono::milliseconds reservation_ttl{10 * 60 * 1000};  // "reserve": true
    std::string backend_kind;    // the backend URL's scheme, "memory" for the in-process store
    std::int64_t loaded_at = 0;  // when this config was loaded, Unix seconds
    std::uint64_t version = 0;   // 0 for the first config, +1 per reload
  };
  // One request's way out: counts the answer in the metrics, then sends it. The decision
  // endpoints copy it into the store's callback.
  struct Reply {
    Service* service;
    std::string_view endpoint;  // a fixed label, never the client's path
    Stopwatch started;
    Responder respond;
    void operator()(HttpResponse response) const;
    // The two halves of operator(), for an answer sent later than it was decided (shaping): the
    // metrics count the decision's latency, not the hold.
    void count(int status) const;
    void send(HttpResponse response) const { respond(std::move(response)); }
  };

  Result<std::shared_ptr<Settings>> build(const policy::Config& config) const;
  // The current settings, through a per-thread cache (valid until this thread calls it again).
  const std::shared_ptr<const Settings>& settings() const;

  // An endpoint: its path (also its metrics label), the methods it allows (as in `Allow`), and
  // what answers it (src/server/router.h).
  using Route = server::Route<void (Service::*)(const HttpRequest& request, const Reply& reply)>;
  static const Route kRoutes[];
  // The endpoint at `path` (the target without its query), or null.
  static const Route* route_of(std::string_view path);
  // A path as metrics and logs name it: `route`'s path, or "/v1/other" / "other" for a path that
  // is no endpoint (a client cannot add labels, nor its key to a log line).
  static std::string_view label_of(std::string_view path, const Route* route);

  // The decision endpoints (service_decisions.cc).
  void limit(const HttpRequest& request, const Reply& reply);
  void check(const HttpRequest& request, const Reply& reply);
  void auth(const HttpRequest& request, const Reply& reply);
  // Usage-based limits (service_reservations.cc): POST /v1/commit and /v1/cancel.
  void commit(const HttpRequest& request, const Reply& reply);
  void cancel(const HttpRequest& request, const Reply& reply);
  void settle(const Settlement& settlement, const Reply& reply);
  // Concurrency limits (service_reservations.cc): POST /v1/release frees a ticket's slots.
  void release(const HttpRequest& request, const Reply& reply);
  // Counts the slots an admitted request took, by concurrency layer.
  void holds_acquired(const policy::PolicyDecision& decision);
  // Counts the slots a settlement (a release, commit or cancel) gave back, or found expired.
  void holds_settled(const Settled& settled);
  // The operational endpoints (service_ops.cc).
  void metrics_text(const HttpRequest& request, const Reply& reply);
  void index(const HttpRequest& request, const Reply& reply);
  void healthz(const HttpRequest& request, const Reply& reply);
  void readyz(const HttpRequest& request, const Reply& reply);
  void stats(const HttpRequest& request, const Reply& reply);
  void dashboard(const HttpRequest& request, const Reply& reply);
  // What the decision endpoints share (service_decisions.cc).
  // `reserve`: POST /v1/check with "reserve": true (the answer names the reservation).
  void run_policy(const std::shared_ptr<const Settings>& settings,
                  const policy::Attributes& attributes, std::int64_t cost, bool for_nginx,
                  const Reply& reply, bool reserve = false);
  // Counts a backend error and what on_error answered, and logs it (at most a line a second).
  void backend_failed(const Error& error, bool allowed);
  // A reserve the store could not keep (kStoreFull): counted, logged, answered 503 (never
  // admitted, whatever on_error says). Otherwise nullopt.
  std::optional<HttpResponse> reservation_refused(const Error& error);
  // A /v1/auth request whose client-address headers go unread (the configured one absent, or
  // the peer not a trusted proxy): said to the operator (service_decisions.cc).
  void note_unread_client_headers(const HttpRequest& request, const Settings& settings,
                                  bool trusted_peer);
  HttpResponse limit_response(const Limit& limit, policy::OnError on_error,
                              const std::string& stored_key, const Result<Decision>& decision);
  HttpResponse policy_response(const Settings& settings, bool for_nginx,
                               const Result<policy::PolicyDecision>& result);
  // GET /v1/auth admitted after `delay` µs (shaping): `response` is held until then
  // (server.max_delayed at most; one more is denied, its charge kept).
  void hold(HttpResponse response, Micros delay, const Reply& reply);

  Service(std::unique_ptr<Store> store, std::shared_ptr<const TenantDirectory> tenants);

  std::unique_ptr<Store> store_;
  std::shared_ptr<const TenantDirectory> tenants_;
  const std::uint64_t id_;  // unique for the process's lifetime: the settings cache's key
  mutable std::mutex settings_mutex_;
  std::shared_ptr<const Settings> settings_;
  std::atomic<std::uint64_t> settings_version_{0};
  Metrics metrics_;
  TopKeys top_denied_;             // the most denied keys, for /v1/stats
  const std::uint64_t mask_salt_;  // random: masked keys in /v1/stats hash with it
  const Stopwatch started_;        // uptime
  bool log_json_ = false;  // server.log_format: json: decisions carry their log fields (at start)
  RateLimitedLog error_log_;                           // backend errors, one line a second at most
  RateLimitedLog proxy_log_{std::chrono::minutes(1)};  // a proxy's unread client-address header
  UntrustedForwarders untrusted_forwarders_;  // client-address headers from untrusted peers
  std::mutex metrics_sources_mutex_;
  std::vector<std::function<void(std::string&)>> metrics_sources_;
  // Last: its destructor sends the answers still held, which use the members above.
  std::shared_ptr<Runtime> runtime_ = system_runtime();
  HeldReplies held_{*runtime_, 0};
};

}  // namespace spillway::server
