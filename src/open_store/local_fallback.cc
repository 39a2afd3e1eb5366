// LocalFallbackStore (spillway/local_fallback.h): its local store and state are Impl's; the
// header keeps only a pointer to it.
#include "spillway/local_fallback.h"

#include <atomic>
#include <string>
#include <vector>

#include "src/core/metrics_text.h"
#include "src/core/rate_limited_log.h"
#include "src/open_store/owned_request.h"

namespace spillway {

struct LocalFallbackStore::Impl {
  explicit Impl(std::unique_ptr<Store> store) : local(std::move(store)) {}
  // Whether `error` from the primary means: decide locally (and notes it).
  bool falls_back(const Error& error);
  void answered_by_primary() { on_local.store(false, std::memory_order_relaxed); }

  const std::unique_ptr<Store> local;
  RateLimitedLog log;
  std::atomic<bool> on_local{false};
  std::atomic<std::uint64_t> local_decisions{0};
};

LocalFallbackStore::LocalFallbackStore(std::unique_ptr<Store> primary, std::unique_ptr<Store> local)
    : ForwardingStore(std::move(primary)), impl_(std::make_unique<Impl>(std::move(local))) {}

// The primary first: its last callbacks (failed in-flight checks) use the local store and the log.
LocalFallbackStore::~LocalFallbackStore() { destroy_inner(); }

bool LocalFallbackStore::Impl::falls_back(const Error& error) {
  if (!is_backend_failure(error)) return false;
  on_local.store(true, std::memory_order_relaxed);
  local_decisions.fetch_add(1, std::memory_order_relaxed);
  log.write("spillway: backend error (" + std::string(errc_name(error.code)) +
            "): " + error.message + "; on_error local: decided by the in-process limiter");
  return true;
}

void LocalFallbackStore::decide(const StoreRequest& request, AllCallback done) {
  // Copies of the keys and limits: the caller's may be gone when the primary answers.
  auto owned = std::make_shared<const OwnedRequest>(request);
  inner().decide(request, [impl = impl_.get(), owned,
                           done = std::move(done)](Result<Decisions> decisions) mutable {
    if (decisions) {
      impl->answered_by_primary();
      // A reset forgets what an outage left in the local store too.
      if (owned->request.operation() == Operation::kReset) {
        impl->local->decide(owned->request, [](Result<Decisions>) {});
      }
      return done(std::move(decisions));
    }
    // The local store answers checks, charges and resets only. No reservation is made in the
    // process: one made during an outage could not be settled through the primary once it is
    // back; an operation this wrapper does not know gets the primary's error as it is.
    const Operation operation = owned->request.operation();
    const bool local_answers = operation == Operation::kCheck || operation == Operation::kCharge ||
                               operation == Operation::kReset;
    if (!local_answers || !impl->falls_back(decisions.error())) {
      return done(std::move(decisions));
    }
    impl->local->decide(owned->request, std::move(done));
  });
}

bool LocalFallbackStore::ready() const { return impl_->local->ready(); }

std::uint64_t LocalFallbackStore::local_decisions() const { return impl_->local_decisions.load(); }

std::string_view LocalFallbackStore::status() const {
  return impl_->on_local.load(std::memory_order_relaxed) ? "local_fallback" : inner().status();
}

void LocalFallbackStore::append_metrics(std::string& out) const {
  inner().append_metrics(out);
  append_metric_family(out, "spillway_local_fallback_decisions_total", MetricType::kCounter,
                       "Checks decided by the in-process limiter because the backend failed "
                       "(on_error: local).");
  append_metric_sample(out, "spillway_local_fallback_decisions_total", {}, local_decisions());
}

}  // namespace spillway
