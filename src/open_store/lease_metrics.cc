// LeaseStore (spillway/lease_store.h): its counts and its Prometheus metrics, written through the
// one metrics writer (src/core/metrics_text.h) after the wrapped store's:
// spillway_lease_units{state="held|used|returned|lost"} (units), spillway_lease_calls_total
// {call="acquire|return"}, spillway_lease_local_decisions_total.
// Thread safety: from any thread; the counters are relaxed atomics, each read on its own (a
// snapshot of each, not of all at one instant).
#include <algorithm>
#include <utility>

#include "spillway/lease_store.h"
#include "src/core/metrics_text.h"
#include "src/open_store/lease_store_impl.h"

namespace spillway {

LeaseStore::Counts LeaseStore::Impl::counts() const {
  return {.held = held_.sum(),
          .used = used_.sum(),
          .returned = returned_.load(std::memory_order_relaxed),
          .lost = lost_.load(std::memory_order_relaxed),
          .acquire_calls = acquire_calls_.load(std::memory_order_relaxed),
          .return_calls = return_calls_.load(std::memory_order_relaxed),
          .local_decisions = static_cast<std::uint64_t>(local_.sum())};
}

void LeaseStore::append_metrics(std::string& out) const {
  inner().append_metrics(out);
  const Counts c = impl_->counts();
  append_metric_family(out, "spillway_lease_units", MetricType::kGauge,
                       "Units of quota leases: held now (charged to the shared store, not yet "
                       "admitted), and since start used (admitted), returned (given back) and "
                       "lost (left in ended leases, not given back).");
  const std::pair<const char*, std::int64_t> states[] = {
      {"held", c.held}, {"used", c.used}, {"returned", c.returned}, {"lost", c.lost}};
  for (const auto& [state, value] : states) {
    append_metric_sample(out, "spillway_lease_units", {{"state", state}},
                         static_cast<std::uint64_t>(std::max<std::int64_t>(0, value)));
  }
  append_metric_family(out, "spillway_lease_calls_total", MetricType::kCounter,
                       "Calls to the shared store for leases: acquire (a new lease) and return "
                       "(a lease's leftover given back).");
  append_metric_sample(out, "spillway_lease_calls_total", {{"call", "acquire"}}, c.acquire_calls);
  append_metric_sample(out, "spillway_lease_calls_total", {{"call", "return"}}, c.return_calls);
  append_metric_family(out, "spillway_lease_local_decisions_total", MetricType::kCounter,
                       "Checks admitted from leases alone, without a call to the shared store.");
  append_metric_sample(out, "spillway_lease_local_decisions_total", {}, c.local_decisions);
}

}  // namespace spillway
