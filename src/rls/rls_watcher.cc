#include "src/rls/rls_watcher.h"

namespace spillway::rls {

RlsWatcher::RlsWatcher(RlsEngine& engine, std::string path, std::string loaded_fingerprint,
                       std::chrono::milliseconds interval,
                       std::function<void(const std::string&)> log, std::function<void()> reloaded)
    : engine_(engine),
      path_(std::move(path)),
      interval_(interval),
      log_(std::move(log)),
      reloaded_(std::move(reloaded)),
      fingerprint_(std::move(loaded_fingerprint)) {
  if (interval_.count() > 0) thread_ = std::thread([this] { watch(); });
}

RlsWatcher::~RlsWatcher() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

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

void RlsWatcher::watch() {
  std::unique_lock stop_lock(stop_mutex_);
  while (!stop_cv_.wait_for(stop_lock, interval_, [this] { return stopping_; })) {
    stop_lock.unlock();
    const std::string now = rls_rules_fingerprint(path_);
    {
      std::lock_guard lock(reload_mutex_);
      if (now != fingerprint_) (void)reload_locked(now);
    }
    stop_lock.lock();
  }
}

void RlsWatcher::render(std::string& out) const {
  out +=
      "# HELP spillway_rls_config_reloads_total Loads of the rate limit service's rules after "
      "start, by result (error: the previous rules stayed in force).\n"
      "# TYPE spillway_rls_config_reloads_total counter\n"
      "spillway_rls_config_reloads_total{result=\"ok\"} " +
      std::to_string(ok_.load(std::memory_order_relaxed)) +
      "\nspillway_rls_config_reloads_total{result=\"error\"} " +
      std::to_string(errors_.load(std::memory_order_relaxed)) +
      "\n# HELP spillway_rls_config_domains Domains in the rules in force.\n"
      "# TYPE spillway_rls_config_domains gauge\nspillway_rls_config_domains " +
      std::to_string(engine_.rules()->domains.size()) + "\n";
}

}  // namespace spillway::rls
