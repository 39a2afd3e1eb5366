#include "spillway/local_fallback.h"

#include <string>
#include <vector>

#include "src/core/metrics_text.h"
#include "src/core/rate_limited_log.h"
#include "src/open_store/owned_request.h"

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

void LocalFallbackStore::decide(const StoreRequest& request, AllCallback done) {
  // Copies of the keys and limits: the caller's may be gone when the primary answers.
  auto owned = std::make_shared<const OwnedRequest>(request);
  primary_->decide(request,
                   [this, owned, done = std::move(done)](Result<Decisions> decisions) mutable {
                     if (decisions) {
                       answered_by_primary();
                       // A reset forgets what an outage left in the local store too.
                       if (owned->request.operation() == Operation::kReset) {
                         local_->decide(owned->request, [](Result<Decisions>) {});
                       }
                       return done(std::move(decisions));
                     }
                     if (!falls_back(decisions.error())) return done(std::move(decisions));
                     local_->decide(owned->request, std::move(done));
                   });
}

void LocalFallbackStore::settle(const Settlement& settlement, SettleCallback done) {
  // Copies: the caller's settlement may be gone when the primary answers.
  struct Owned {
    std::string id;
    std::vector<std::string> labels;
    std::vector<LayerCost> costs;
    Settlement settlement;
  };
  auto owned = std::make_shared<Owned>();
  owned->id = std::string(settlement.id);
  for (const LayerCost& c : settlement.costs) owned->labels.emplace_back(c.label);
  for (std::size_t i = 0; i < owned->labels.size(); ++i) {
    owned->costs.push_back({owned->labels[i], settlement.costs[i].cost});
  }
  owned->settlement = settlement;
  owned->settlement.id = owned->id;
  owned->settlement.costs = owned->costs;
  primary_->settle(owned->settlement,
                   [this, owned, done = std::move(done)](Result<Settled> settled) mutable {
                     if (settled || !falls_back(settled.error())) return done(std::move(settled));
                     local_->settle(owned->settlement, std::move(done));
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
