#include "spillway/local_fallback.h"

#include <string>
#include <vector>

#include "src/backends/owned_checks.h"
#include "src/core/metrics_text.h"
#include "src/core/rate_limited_log.h"

namespace spillway {

LocalFallbackStore::LocalFallbackStore(std::unique_ptr<Store> primary, std::unique_ptr<Store> local)
    : primary_(std::move(primary)),
      local_(std::move(local)),
      log_(std::make_unique<RateLimitedLog>()) {}

LocalFallbackStore::~LocalFallbackStore() = default;

bool LocalFallbackStore::falls_back(const Error& error) {
  if (error.code != Errc::kUnavailable && error.code != Errc::kTimeout) return false;
  on_local_.store(true, std::memory_order_relaxed);
  local_decisions_.fetch_add(1, std::memory_order_relaxed);
  log_->write("spillway: backend error (" + std::string(errc_name(error.code)) +
              "): " + error.message + "; on_error local: decided by the in-process limiter");
  return true;
}

Result<Decision> LocalFallbackStore::check(std::string_view key, const Limit& limit,
                                           std::int64_t cost, std::optional<Micros> now) {
  Result<Decision> decision = primary_->check(key, limit, cost, now);
  if (decision) {
    answered_by_primary();
    return decision;
  }
  if (!falls_back(decision.error())) return decision;
  return local_->check(key, limit, cost, now);
}

void LocalFallbackStore::check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                                     std::optional<Micros> now, Callback done) {
  // The key must outlive the primary's answer, which may come on another thread.
  primary_->check_async(key, limit, cost, now,
                        [this, owned_key = std::string(key), limit, cost, now,
                         done = std::move(done)](Result<Decision> decision) mutable {
                          if (decision) {
                            answered_by_primary();
                            return done(std::move(decision));
                          }
                          if (!falls_back(decision.error())) return done(std::move(decision));
                          done(local_->check(owned_key, limit, cost, now));
                        });
}

Result<Decisions> LocalFallbackStore::check_all(std::span<const KeyedLimit> checks,
                                                std::int64_t cost, std::optional<Micros> now) {
  Result<Decisions> decisions = primary_->check_all(checks, cost, now);
  if (decisions) {
    answered_by_primary();
    return decisions;
  }
  if (!falls_back(decisions.error())) return decisions;
  return local_->check_all(checks, cost, now);
}

void LocalFallbackStore::check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                                         std::optional<Micros> now, AllCallback done) {
  // Copies of the keys and limits: the caller's may be gone when the primary answers.
  auto owned = std::make_shared<const OwnedChecks>(checks);
  primary_->check_all_async(
      checks, cost, now,
      [this, owned, cost, now, done = std::move(done)](Result<Decisions> decisions) mutable {
        if (decisions) {
          answered_by_primary();
          return done(std::move(decisions));
        }
        if (!falls_back(decisions.error())) return done(std::move(decisions));
        done(local_->check_all(owned->checks, cost, now));
      });
}

std::string_view LocalFallbackStore::status() const {
  return on_local_.load(std::memory_order_relaxed) ? "local_fallback" : primary_->status();
}

void LocalFallbackStore::append_metrics(std::string& out) const {
  primary_->append_metrics(out);
  append_metric_family(out, "spillway_local_fallback_decisions_total", MetricType::kCounter,
                       "Checks decided by the in-process limiter because the backend failed "
                       "(on_error: local).");
  append_metric_sample(out, "spillway_local_fallback_decisions_total", {}, local_decisions());
}

}  // namespace spillway
