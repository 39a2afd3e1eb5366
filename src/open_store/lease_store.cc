// LeaseStore (spillway/lease_store.h): making and ending the store, and where a request goes. The
// shape of one check:
//   decide() -> attempt() (lease_take.cc): each leased layer takes its cost from its key's lease,
//   under its shard's lock, one layer at a time. Three outcomes:
//     all taken  -> the exact layers (if any) go to the shared store in one call; a denial or an
//                   error there puts the units back (put_back); else the answer is final.
//     a denial   -> a remembered shared denial covers some layer: units put back, denied.
//     missing    -> some lease is empty or over: units put back, one lease request per missing
//                   key (acquire, lease_acquire.cc; checks that need the same key wait on the one
//                   in flight), then the whole request is tried again (Pending). After kMaxRounds
//                   tries it is decided exactly by the shared store instead: a request is never
//                   refused for want of a lease.
// The rest: the table (lease_table.h), ending leases by time and at exit (lease_sweep.cc), the
// counts and metrics (lease_metrics.cc). The state is LeaseStore::Impl's
// (src/open_store/lease_store_impl.h); LeaseStore's methods pass each call on to it.
// Thread safety: every method from any thread; an entry only under its shard's lock.
#include "spillway/lease_store.h"

#include <algorithm>

#include "src/open_store/lease_store_impl.h"

namespace spillway {

using lease_table::leased;
using lease_table::Place;
using lease_table::place_of;

LeaseStore::LeaseStore(std::unique_ptr<Store> inner, LeaseStoreOptions options)
    : ForwardingStore(std::move(inner)), impl_(std::make_unique<Impl>(this->inner(), options)) {}

LeaseStore::~LeaseStore() {
  impl_->stop_sweeper();
  impl_->release_all(std::chrono::seconds(1));
  destroy_inner();  // its last callbacks run while this object (and impl_) is whole
}

void LeaseStore::decide(const StoreRequest& request, AllCallback done) {
  impl_->decide(request, done);
}

void LeaseStore::clear_caches() {
  impl_->clear_caches();
  inner().clear_caches();
}

void LeaseStore::sweep(std::optional<Micros> now) { impl_->sweep(now); }

void LeaseStore::release_all(std::chrono::milliseconds timeout) { impl_->release_all(timeout); }

LeaseStore::Counts LeaseStore::counts() const { return impl_->counts(); }

LeaseStore::Impl::Impl(Store& inner, LeaseStoreOptions options)
    : inner_(inner),
      options_(options),
      runtime_(options.runtime ? options.runtime : system_runtime()),
      clock_(options.clock ? options.clock : runtime_->monotonic_clock()) {
  if (options_.sweep_interval.count() > 0) {
    sweeper_ = runtime_->every(std::chrono::microseconds(options_.sweep_interval).count(),
                               [this] { sweep(); });
  }
}

LeaseStore::Impl::~Impl() { stop_sweeper(); }

void LeaseStore::Impl::stop_sweeper() { sweeper_.cancel(); }

void LeaseStore::Impl::decide(const StoreRequest& request, AllCallback& done) {
  const std::span<const KeyedLimit> checks = request.checks();
  if (request.operation() != Operation::kCheck) {
    if (request.operation() == Operation::kReset) {
      // The shared state forgets these keys; so do their leases here (units not given back).
      for (const KeyedLimit& check : checks) {
        Place place = place_of(*check.limit, check.key);
        Shard& shard = shards_[place.shard];
        std::lock_guard lock(shard.mutex);
        auto it = shard.entries.find(place.entry_key);
        if (it == shard.entries.end() || it->second.acquiring || it->second.borrowers > 0) {
          continue;  // in use: its lease ends by time
        }
        held_.add(-std::max<std::int64_t>(0, it->second.left()));
        shard.entries.erase(it);
      }
    }
    inner().decide(request, std::move(done));
    return;
  }
  bool any = false;
  for (std::size_t i = 0; i < checks.size(); ++i)
    any = any || leased(checks[i], request.cost_of(i));
  if (!any) {
    inner().decide(request, std::move(done));
    return;
  }
  attempt(request, done, nullptr);
}

void LeaseStore::Impl::clear_caches() {
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    for (auto& [key, entry] : shard.entries) {
      entry.denied.reset();
    }
  }
}

}  // namespace spillway
