// OverLimitCache (spillway/over_limit_cache.h): the table of denials and the counters are
// Impl's; the header keeps only a pointer to it.
#include "spillway/over_limit_cache.h"

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "src/core/inline_completion.h"
#include "src/core/limit_key.h"
#include "src/core/metrics_text.h"
#include "src/core/remembered_denial.h"
#include "src/open_store/owned_request.h"

namespace spillway {
namespace {

// The remembered denials: an LRU list of entries and an index by key + limit. Guarded by one
// mutex (lookups are a hash probe; the cache sits in front of a network round trip).
class DenialTable {
 public:
  using Denial = RememberedDenial;  // a `forever` one is denied until evicted

  explicit DenialTable(std::size_t max_entries) : max_entries_(max_entries) {}

  std::optional<Denial> find(const std::string& id, std::int64_t cost, Micros at) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    const Denial denial = it->second->second;
    if (denial.expired(at)) {  // only time passed, nothing to keep
      const auto node = it->second;
      index_.erase(it);  // first: its key views the node's string
      lru_.erase(node);
      size_.store(lru_.size(), std::memory_order_relaxed);
      return std::nullopt;
    }
    if (cost < denial.min_cost) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second);
    return denial;
  }

  void put(std::string id, const Denial& denial) {
    if (max_entries_ == 0) return;
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(id); it != index_.end()) {
      it->second->second = denial;
      lru_.splice(lru_.begin(), lru_, it->second);
      return;
    }
    lru_.emplace_front(std::move(id), denial);
    index_.emplace(lru_.front().first, lru_.begin());
    while (lru_.size() > max_entries_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    size_.store(lru_.size(), std::memory_order_relaxed);
  }

  void clear() {
    std::lock_guard lock(mutex_);
    index_.clear();
    lru_.clear();
    size_.store(0, std::memory_order_relaxed);
  }

  // Without the lock: lets a check skip building its entry's id while the cache is empty.
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_entries_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, Denial>> lru_;  // most recently used first
  std::unordered_map<std::string_view, std::list<std::pair<std::string, Denial>>::iterator> index_;
  std::atomic<std::size_t> size_{0};  // lru_.size(), kept for size()
};

}  // namespace

struct OverLimitCache::Impl {
  Impl(std::size_t max_entries, std::shared_ptr<const Clock> given)
      : table(max_entries), clock(given ? std::move(given) : std::make_shared<SteadyClock>()) {}

  Micros time(std::optional<Micros> now) const { return now ? *now : clock->now(); }
  // The cached denial of `key` under `limit` for `cost` at `at`, if there is one.
  std::optional<Decision> lookup(std::string_view key, const Limit& limit, std::int64_t cost,
                                 Micros at);
  // Every check's cached answer when at least one is a cached denial; nullopt otherwise.
  std::optional<Decisions> cached_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                      Micros at);
  void remember(std::string_view key, const Limit& limit, std::int64_t cost, Micros sent,
                const Decision& denial);
  // remember() for each key of an all-or-nothing check and its decision.
  void remember_all(std::span<const KeyedLimit> checks, std::int64_t cost, Micros sent,
                    const Decisions& decisions);

  DenialTable table;
  const std::shared_ptr<const Clock> clock;
  std::atomic<std::uint64_t> hits{0};
};

OverLimitCache::OverLimitCache(std::unique_ptr<Store> inner, std::size_t max_entries,
                               std::shared_ptr<const Clock> clock)
    : ForwardingStore(std::move(inner)),
      impl_(std::make_unique<Impl>(max_entries, std::move(clock))) {}

// The wrapped store first: its last callbacks (in-flight checks it fails) write to the table.
OverLimitCache::~OverLimitCache() { destroy_inner(); }

std::optional<Decision> OverLimitCache::Impl::lookup(std::string_view key, const Limit& limit,
                                                     std::int64_t cost, Micros at) {
  if (cost <= 0 || table.size() == 0) return std::nullopt;
  std::optional<DenialTable::Denial> denial = table.find(limit_key(limit, key), cost, at);
  if (!denial) return std::nullopt;
  // A cost above what the limit admits into never passes; any other cost above the cached one
  // waits at least as long as the cached denial (its retry_after is then a lower bound).
  const bool never = denial->forever || cost > limit.admit_capacity();
  return Decision{.allowed = false,
                  .limit = limit.limit(),
                  .remaining = 0,
                  .retry_after = never ? kNever : denial->wait(at),
                  .reset_after = denial->forever ? 0 : denial->wait(at),
                  .local = true};
}

void OverLimitCache::Impl::remember(std::string_view key, const Limit& limit, std::int64_t cost,
                                    Micros sent, const Decision& denial) {
  if (denial.local) return;  // this process's own answer, not the backend's
  // A concurrency limit's slot comes back at a release, at no time a denial could say.
  if (limit.is_concurrency()) return;
  if (std::optional<RememberedDenial> entry = RememberedDenial::of(denial, cost, sent)) {
    table.put(limit_key(limit, key), *entry);
  }
}

void OverLimitCache::Impl::remember_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                        Micros sent, const Decisions& decisions) {
  if (decisions.size() != checks.size()) return;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    remember(checks[i].key, *checks[i].limit, cost_of(checks[i], cost), sent, decisions[i]);
  }
}

std::optional<Decisions> OverLimitCache::Impl::cached_all(std::span<const KeyedLimit> checks,
                                                          std::int64_t cost, Micros at) {
  std::vector<std::optional<Decision>> cached(checks.size());
  bool any = false;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    cached[i] = lookup(checks[i].key, *checks[i].limit, cost_of(checks[i], cost), at);
    any = any || cached[i].has_value();
  }
  if (!any) return std::nullopt;
  hits.fetch_add(1, std::memory_order_relaxed);
  Decisions decisions;
  decisions.reserve(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    decisions.push_back(cached[i] ? *cached[i] : not_consulted(*checks[i].limit));
  }
  return decisions;
}

void OverLimitCache::decide(const StoreRequest& request, AllCallback done) {
  if (request.operation() == Operation::kReset) {
    // Counters forgotten: no denial remembered may answer for them. All are dropped (an exact
    // cache only costs backend calls when empty; a reset is an operator's rare act).
    impl_->table.clear();
    return inner().decide(request, std::move(done));
  }
  // Only checks (and reserves, checks that keep their charges) are answered here or remembered:
  // usage charged after the work denies nothing, and an operation this cache does not know goes
  // to the backend untouched.
  if (request.operation() != Operation::kCheck && request.operation() != Operation::kReserve) {
    return inner().decide(request, std::move(done));
  }
  const Micros sent = impl_->time(request.now());
  if (std::optional<Decisions> cached = impl_->cached_all(request.checks(), request.cost(), sent)) {
    return complete_inline(done, Result<Decisions>(std::move(*cached)));
  }
  // Copies of the keys and limits: the caller's may be gone when the backend answers.
  auto owned = std::make_shared<const OwnedRequest>(request);
  inner().decide(request, [impl = impl_.get(), owned, sent,
                           done = std::move(done)](Result<Decisions> decisions) {
    if (decisions) impl->remember_all(owned->checks, owned->request.cost(), sent, *decisions);
    done(std::move(decisions));
  });
}

void OverLimitCache::append_metrics(std::string& out) const {
  inner().append_metrics(out);
  append_metric_family(out, "spillway_over_limit_cache_hits_total", MetricType::kCounter,
                       "Checks denied by the local over-limit cache without a backend call.");
  append_metric_sample(out, "spillway_over_limit_cache_hits_total", {}, hits());
  append_metric_family(out, "spillway_over_limit_cache_entries", MetricType::kGauge,
                       "Denials the local over-limit cache holds.");
  append_metric_sample(out, "spillway_over_limit_cache_entries", {}, std::uint64_t{entries()});
}

void OverLimitCache::clear_caches() {
  impl_->table.clear();
  inner().clear_caches();
}

std::uint64_t OverLimitCache::hits() const { return impl_->hits.load(std::memory_order_relaxed); }

std::size_t OverLimitCache::entries() const { return impl_->table.size(); }

}  // namespace spillway
