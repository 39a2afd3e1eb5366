// Keeps an RlsEngine's rules in step with their files: reload() now (SIGHUP), and a task on the
// runtime that compares the files' paths and contents every `interval` and reloads on a change (an
// edit, a new file, or a Kubernetes ConfigMap's symlink swap). A set of files that does not load
// keeps the rules in force; it is logged once per change and counted:
//   spillway_rls_config_reloads_total{result="ok"|"error"}, spillway_rls_config_domains
//
// Thread safety: reload() from any thread (reloads are serialized). Ownership: uses `engine`,
// which must outlive the watcher; shares the runtime; the destructor ends the task (waiting for a
// poll under way).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "spillway/runtime.h"
#include "src/rls/rls_engine.h"

namespace spillway::rls {

class RlsWatcher {
 public:
  // `log` gets one line per reload or rejected change; `reloaded` runs after new rules are in
  // force (to clear caches). interval 0: no polling. runtime nullptr: system_runtime().
  // `loaded_fingerprint`: rls_rules_fingerprint(path) taken before the engine's rules were
  // loaded, so that a change made since is seen.
  RlsWatcher(RlsEngine& engine, std::string path, std::string loaded_fingerprint,
             std::chrono::milliseconds interval, std::function<void(const std::string&)> log,
             std::function<void()> reloaded, std::shared_ptr<Runtime> runtime = nullptr);
  ~RlsWatcher();
  RlsWatcher(const RlsWatcher&) = delete;
  RlsWatcher& operator=(const RlsWatcher&) = delete;

  // Loads the files now; an error keeps the rules in force.
  Result<void> reload();
  void render(std::string& out) const;

 private:
  void poll();
  Result<void> reload_locked(const std::string& fingerprint);

  RlsEngine& engine_;
  const std::string path_;
  const std::chrono::milliseconds interval_;
  std::function<void(const std::string&)> log_;
  std::function<void()> reloaded_;
  std::mutex reload_mutex_;
  std::string fingerprint_;  // of the files last seen (loaded or rejected)
  std::atomic<std::uint64_t> ok_{0}, errors_{0};
  std::shared_ptr<Runtime> runtime_;
  ScheduledTask poller_;  // last: scheduled once everything above is whole
};

}  // namespace spillway::rls
