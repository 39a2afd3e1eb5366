#include "src/rls/rls_watcher.h"

#include "src/core/metrics_text.h"

namespace spillway::rls {

RlsWatcher::RlsWatcher(RlsEngine& engine, std::string path, std::string loaded_fingerprint,
                       std::chrono::milliseconds interval,
                       std::function<void(const std::string&)> log, std::function<void()> reloaded,
                       std::shared_ptr<Runtime> runtime)
    : engine_(engine),
      path_(std::move(path)),
      interval_(interval),
      log_(std::move(log)),
      reloaded_(std::move(reloaded)),
      fingerprint_(std::move(loaded_fingerprint)),
      runtime_(runtime ? std::move(runtime) : system_runtime()) {
  if (interval_.count() > 0) {
    poller_ = runtime_->every(std::chrono::microseconds(interval_).count(), [this] { poll(); });
  }
}

RlsWatcher::~RlsWatcher() { poller_.cancel(); }

Result<void> RlsWatcher::reload() {
  std::lock_guard lock(reload_mutex_);
  return reload_locked(rls_rules_fingerprint(path_));
}

Result<void> RlsWatcher::reload_locked(const std::string& fingerprint) {
  fingerprint_ = fingerprint;
  Result<RlsRules> rules = load_rls_rules(path_);
  if (!rules) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    log_("rules " + path_ + " rejected, still using the previous rules: " + rules.error().message);
    return std::unexpected(rules.error());
  }
  const std::size_t domains = rules->domains.size();
  engine_.set_rules(std::make_shared<const RlsRules>(std::move(*rules)));
  ok_.fetch_add(1, std::memory_order_relaxed);
  if (reloaded_) reloaded_();
  log_("rules reloaded from " + path_ + " (" + std::to_string(domains) + " domains)");
  return {};
}

void RlsWatcher::poll() {
  const std::string now = rls_rules_fingerprint(path_);
  std::lock_guard lock(reload_mutex_);
  if (now != fingerprint_) (void)reload_locked(now);
}

void RlsWatcher::render(std::string& out) const {
  append_metric_family(out, "spillway_rls_config_reloads_total", MetricType::kCounter,
                       "Loads of the rate limit service's rules after start, by result (error: "
                       "the previous rules stayed in force).");
  append_metric_sample(out, "spillway_rls_config_reloads_total", {{"result", "ok"}},
                       std::uint64_t{ok_.load(std::memory_order_relaxed)});
  append_metric_sample(out, "spillway_rls_config_reloads_total", {{"result", "error"}},
                       std::uint64_t{errors_.load(std::memory_order_relaxed)});
  append_metric_family(out, "spillway_rls_config_domains", MetricType::kGauge,
                       "Domains in the rules in force.");
  append_metric_sample(out, "spillway_rls_config_domains", {},
                       std::uint64_t{engine_.rules()->domains.size()});
}

}  // namespace spillway::rls
