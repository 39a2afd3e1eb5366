// LeaseStore (spillway/lease_store.h): taking units from leases. attempt() tries a request from
// its leases once: each leased layer takes its cost from its key's lease (or meets a remembered
// denial, or finds its lease missing), then the exact layers go to the shared store in one call,
// and the units go back to their leases if anything denies (see lease_store.cc for the shape).
// Units are the limit's; times the request's `now` when given, else the clock.
// Thread safety: from any thread; an entry is read and written only under its shard's lock, and
// the counters are atomics.
#include <algorithm>
#include <memory>
#include <vector>

#include "spillway/lease_store.h"
#include "src/core/inline_completion.h"
#include "src/open_store/lease_store_impl.h"

namespace spillway {

using lease_table::kMaxRounds;
using lease_table::leased;
using lease_table::Place;
using lease_table::place_of;

void LeaseStore::Impl::attempt(const StoreRequest& request, AllCallback& done,
                               std::shared_ptr<Pending> pending) {
  const std::span<const KeyedLimit> checks = request.checks();
  const Micros now = time(request.now());
  const std::size_t n = checks.size();

  Decisions out(n);
  TakenUnits taken;
  std::vector<std::size_t> missing;
  bool denied = false;
  bool has_exact = false;
  for (std::size_t i = 0; i < n; ++i)
    has_exact = has_exact || !leased(checks[i], request.cost_of(i));

  for (std::size_t i = 0; i < n && !denied; ++i) {
    const std::int64_t cost = request.cost_of(i);
    if (!leased(checks[i], cost)) continue;
    const Limit& limit = *checks[i].limit;
    Place place = place_of(limit, checks[i].key);
    Shard& shard = shards_[place.shard];
    std::lock_guard lock(shard.mutex);
    Entry& entry = shard.entries.try_emplace(place.entry_key, limit, checks[i].key).first->second;
    entry.spec = *checks[i].lease;
    entry.last_seen = std::max(entry.last_seen, now);
    if (entry.denied && entry.denied->answers(cost, now)) {
      Decision d = entry.denial;
      d.retry_after = entry.denied->wait(now);
      if (!entry.denied->forever) {
        const Micros sent = entry.denied->until - entry.denial.retry_after;
        d.reset_after = std::max<Micros>(0, d.reset_after - (now - sent));
      }
      d.local = true;
      out[i] = d;
      denied = true;
      break;
    }
    if (!entry.id.empty() && now < entry.expires && entry.left() >= cost) {
      entry.used += cost;
      held_.add(-cost);
      taken.push_back({&shard, &entry, entry.generation, cost, has_exact});
      if (has_exact) ++entry.borrowers;
      const Micros since = std::max<Micros>(0, now - entry.acquired);
      const std::int64_t ceiling = std::max(limit.limit(), limit.burst());
      out[i] = Decision{.allowed = true,
                        .limit = limit.limit(),
                        .remaining = std::min(ceiling, entry.shared.remaining + entry.left()),
                        .retry_after = 0,
                        .reset_after = std::max<Micros>(0, entry.shared.reset_after - since),
                        .local = true};
      continue;
    }
    missing.push_back(i);
  }

  // The units go back to their leases (not admitted after all); either way the request lets go.
  auto put_back = [this](const TakenUnits& units) {
    units.for_each([this](const Taken& t) {
      std::lock_guard lock(t.shard->mutex);
      if (t.borrowed) --t.entry->borrowers;
      if (t.entry->generation == t.generation && !t.entry->id.empty()) {
        t.entry->used -= t.units;
        held_.add(t.units);
      } else {
        lost_.fetch_add(t.units, std::memory_order_relaxed);  // its lease ended meanwhile
      }
    });
  };

  if (denied) {
    put_back(taken);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].limit == 0) out[i] = not_consulted(*checks[i].limit);
    }
    complete_inline(done, Result<Decisions>(std::move(out)));
    return;
  }

  if (!missing.empty()) {
    put_back(taken);
    if (!pending) pending = std::make_shared<Pending>(request, std::move(done));
    if (++pending->rounds > kMaxRounds) {
      // Leases kept running out under contention: decide this one exactly.
      inner().decide(pending->owned.request, std::move(pending->done));
      return;
    }
    {
      std::lock_guard lock(pending->mutex);
      pending->waiting = static_cast<int>(missing.size());
    }
    for (std::size_t i : missing) {
      auto waiter = [this, pending](Result<void> got) {
        bool last = false;
        {
          std::lock_guard lock(pending->mutex);
          if (!got && !pending->error) pending->error = got.error();
          last = --pending->waiting == 0;
        }
        if (!last) return;
        if (pending->error) {
          complete_inline(pending->done, Result<Decisions>(std::unexpected(*pending->error)));
          return;
        }
        attempt(pending->owned.request, pending->done, pending);
      };
      const StoreRequest& owned = pending->owned.request;
      acquire(owned.checks()[i], owned.cost_of(i), owned.now(), now, std::move(waiter));
    }
    return;
  }

  // Every leased layer holds its units. The exact layers, if any, decide in one call.
  std::vector<KeyedLimit> exact;
  std::vector<std::size_t> exact_at;
  for (std::size_t i = 0; i < n; ++i) {
    if (leased(checks[i], request.cost_of(i))) continue;
    KeyedLimit check = checks[i];
    check.lease = nullptr;
    exact.push_back(check);
    exact_at.push_back(i);
  }
  if (exact.empty()) {
    std::int64_t units = 0;
    taken.for_each([&units](const Taken& t) { units += t.units; });
    used_.add(units);
    local_.add(1);
    complete_inline(done, Result<Decisions>(std::move(out)));
    return;
  }
  auto sub = StoreRequest::make(exact, request.cost(), request.now());
  if (!sub) {
    put_back(taken);
    complete_inline(done, Result<Decisions>(std::unexpected(sub.error())));
    return;
  }
  inner().decide(*sub, [this, done = std::move(done), pending = std::move(pending),
                        out = std::move(out), taken = std::move(taken),
                        exact_at = std::move(exact_at), put_back](Result<Decisions> got) mutable {
    if (!got) {
      put_back(taken);
      done(std::move(got));
      return;
    }
    bool admitted = true;
    for (std::size_t j = 0; j < exact_at.size(); ++j) {
      out[exact_at[j]] = (*got)[j];
      admitted = admitted && (*got)[j].allowed;
    }
    if (admitted) {
      std::int64_t units = 0;
      taken.for_each([&units](const Taken& t) {
        units += t.units;
        std::lock_guard lock(t.shard->mutex);
        --t.entry->borrowers;
      });
      used_.add(units);
    } else {
      put_back(taken);
    }
    done(Result<Decisions>(std::move(out)));
  });
}

}  // namespace spillway
