// LeaseStore (spillway/lease_store.h). The shape of one check:
//   decide() -> take_units(): each leased layer takes its cost from its key's lease, under its
//   shard's lock, one layer at a time. Three outcomes:
//     all taken  -> the exact layers (if any) go to the shared store in one call; a denial or an
//                   error there puts the units back (put_back); else the answer is final.
//     a denial   -> a remembered shared denial covers some layer: units put back, denied.
//     missing    -> some lease is empty or over: units put back, one lease request per missing
//                   key (acquire; checks that need the same key wait on the one in flight), then
//                   the whole request is tried again (Pending). After kMaxRounds tries it is
//                   decided exactly by the shared store instead: a request is never refused
//                   for want of a lease.
#include "spillway/lease_store.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "src/core/inline_completion.h"
#include "src/core/metrics_text.h"
#include "src/open_store/owned_request.h"

namespace spillway {

namespace {

constexpr std::size_t kShards = 64;
constexpr int kMaxRounds = 8;
constexpr std::int64_t kIdleLeaseAges = 10;  // a key without a lease is forgotten after this

// The limit's numbers in front of the key, so one key under two limits is two entries.
void append_entry_key(std::string& out, const Limit& limit, std::string_view key) {
  const std::int64_t numbers[] = {static_cast<std::int64_t>(limit.algorithm()), limit.limit(),
                                  limit.period(), limit.burst()};
  out.append(reinterpret_cast<const char*>(numbers), sizeof numbers);
  out.append(key);
}

bool leased(const KeyedLimit& check, std::int64_t cost) {
  return check.lease != nullptr && cost > 0;
}

// The answer for a layer the request never asked about because another layer denied first.
Decision not_consulted(const Limit& limit) {
  return {.allowed = true, .limit = limit.limit(), .remaining = limit.limit(), .local = true};
}

}  // namespace

struct LeaseStore::Entry {
  Entry(const Limit& l, std::string_view k) : limit(l), key(k) {}
  const Limit limit;
  const std::string key;  // the shared store's key
  LeaseSpec spec;         // the latest one a check gave

  // The lease: `granted` units charged as reservation `id` at `acquired` (the charge's send
  // time), usable until `expires`; `used` taken from it (including units taken by a request that
  // is still deciding). No lease: id empty.
  std::string id;
  std::int64_t granted = 0;
  std::int64_t used = 0;
  Micros acquired = 0;
  Micros expires = 0;
  Decision shared{};             // the shared store's answer to the charge
  bool given_time = false;       // charged at a request's own `now`: returned at such a time
  std::uint64_t generation = 0;  // one more per lease: a put-back finds its own lease or none

  // The demand seen on the last lease that ended: `last_used` units over `last_span` µs.
  std::int64_t last_used = 0;
  Micros last_span = 0;

  // A denial of cost >= denied_cost by the shared store, valid until denied_until (forever when
  // the retry_after was kNever).
  std::int64_t denied_cost = 0;
  Micros denied_until = 0;
  bool denied_forever = false;
  Decision denial{};

  // A lease request in flight, and who waits for it.
  bool acquiring = false;
  std::int64_t waiting_need = 0;
  std::vector<std::function<void(Result<void>)>> waiters;

  Micros last_seen = 0;
  // Requests that took units and wait for their exact layers' answer: they hold this entry's
  // address, so the sweep does not forget it meanwhile.
  int borrowers = 0;

  std::int64_t left() const { return granted - used; }
};

struct LeaseStore::Shard {
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
};

// Units taken from a lease by a request that has not finished deciding.
struct LeaseStore::Taken {
  Shard* shard;
  Entry* entry;
  std::uint64_t generation;
  std::int64_t units;
  bool borrowed;  // counted in the entry's borrowers (the request waits for exact layers)
};

// A request's taken units: up to four layers without an allocation.
class TakenUnits {
 public:
  void push_back(const LeaseStore::Taken& taken) {
    if (count_ < first_.size()) {
      first_[count_++] = taken;
    } else {
      more_.push_back(taken);
    }
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = 0; i < count_; ++i) f(first_[i]);
    for (const LeaseStore::Taken& taken : more_) f(taken);
  }

 private:
  std::array<LeaseStore::Taken, 4> first_{};
  std::size_t count_ = 0;
  std::vector<LeaseStore::Taken> more_;
};

// A request that waits for leases: its own copy, its callback, how often it was tried.
struct LeaseStore::Pending {
  Pending(const StoreRequest& request, AllCallback callback)
      : owned(request), done(std::move(callback)) {}
  OwnedRequest owned;
  AllCallback done;
  int rounds = 0;
  std::mutex mutex;
  int waiting = 0;
  std::optional<Error> error;
};

namespace {

// Everything one attempt found; see take_units.
enum class Outcome { kTaken, kDenied, kMissing };

}  // namespace

LeaseStore::LeaseStore(std::unique_ptr<Store> inner, LeaseStoreOptions options)
    : ForwardingStore(std::move(inner)),
      options_(options),
      clock_(options.clock ? options.clock : std::make_shared<SystemClock>()),
      shards_(std::make_unique<Shard[]>(kShards)) {
  if (options_.sweep_interval.count() > 0) sweeper_ = std::thread([this] { sweeper(); });
}

LeaseStore::~LeaseStore() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  release_all();
  destroy_inner();  // its last callbacks run while this object is whole
}

void LeaseStore::sweeper() {
  std::unique_lock lock(stop_mutex_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, options_.sweep_interval);
    if (stopping_) break;
    lock.unlock();
    sweep();
    lock.lock();
  }
}

namespace {

// Where (limit, key) lives: its shard, and its entry's name in a buffer of this thread's (valid
// until this thread's next place_of). No allocation once the buffer has grown.
struct Place {
  std::size_t shard;
  const std::string& entry_key;
};

Place place_of(const Limit& limit, std::string_view key) {
  thread_local std::string buffer;
  buffer.clear();
  append_entry_key(buffer, limit, key);
  return {std::hash<std::string>{}(buffer) % kShards, buffer};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Taking units from leases.

void LeaseStore::decide(const StoreRequest& request, AllCallback done) {
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
        held_.fetch_sub(std::max<std::int64_t>(0, it->second.left()), std::memory_order_relaxed);
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

void LeaseStore::attempt(const StoreRequest& request, AllCallback& done,
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
    const bool remembered =
        cost >= entry.denied_cost && (entry.denied_forever || now < entry.denied_until);
    if (remembered && entry.denied_cost > 0) {
      Decision d = entry.denial;
      d.retry_after = entry.denied_forever ? kNever : entry.denied_until - now;
      d.reset_after = std::max<Micros>(
          0, d.reset_after - (now - (entry.denied_until - entry.denial.retry_after)));
      if (entry.denied_forever) d.reset_after = entry.denial.reset_after;
      d.local = true;
      out[i] = d;
      denied = true;
      break;
    }
    if (!entry.id.empty() && now < entry.expires && entry.left() >= cost) {
      entry.used += cost;
      held_.fetch_sub(cost, std::memory_order_relaxed);
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
        held_.fetch_add(t.units, std::memory_order_relaxed);
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
    used_.fetch_add(units, std::memory_order_relaxed);
    local_.fetch_add(1, std::memory_order_relaxed);
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
      used_.fetch_add(units, std::memory_order_relaxed);
    } else {
      put_back(taken);
    }
    done(Result<Decisions>(std::move(out)));
  });
}

// ---------------------------------------------------------------------------------------------
// Getting and ending leases.

namespace {

// What ending a lease leaves to give back.
struct Leftover {
  std::string id;
  std::int64_t used = 0;
  std::int64_t unused = 0;
  std::optional<Micros> at;  // the settlement's `now`: the lease's own time base
};

}  // namespace

// Ends `entry`'s lease at `now` (under its shard's lock): its demand is remembered, and what it
// still holds is returned for the caller to give back (outside the lock).
static std::optional<Leftover> end_lease(auto& entry, Micros now) {
  if (entry.id.empty()) return std::nullopt;
  entry.last_used = entry.used;
  entry.last_span = std::max<Micros>(0, std::min(now, entry.expires) - entry.acquired);
  Leftover leftover{.id = std::move(entry.id),
                    .used = entry.used,
                    .unused = entry.left(),
                    .at = entry.given_time ? std::optional<Micros>(std::max(now, entry.last_seen))
                                           : std::nullopt};
  entry.id.clear();
  entry.granted = 0;
  entry.used = 0;
  ++entry.generation;
  if (leftover.unused <= 0) return std::nullopt;
  return leftover;
}

void LeaseStore::acquire(const KeyedLimit& check, std::int64_t need, std::optional<Micros> given,
                         Micros now, std::function<void(Result<void>)> waiter) {
  Place place = place_of(*check.limit, check.key);
  Shard& shard = shards_[place.shard];
  std::optional<Leftover> leftover;
  std::int64_t size = 0;
  Micros max_age = 0;
  Entry* entry = nullptr;
  {
    std::lock_guard lock(shard.mutex);
    entry = &shard.entries.try_emplace(place.entry_key, *check.limit, check.key).first->second;
    entry->spec = *check.lease;
    entry->waiters.push_back(std::move(waiter));
    entry->waiting_need += need;
    if (entry->acquiring) return;
    entry->acquiring = true;
    // The lease in place (if any) is over or too small for this request: end it.
    leftover = end_lease(*entry, now);
    if (leftover) held_.fetch_sub(leftover->unused, std::memory_order_relaxed);
    size = lease_size(entry->limit, entry->spec, need, entry->last_used, entry->last_span);
    // Enough for every check already waiting, within the cap.
    size = std::max(size, std::min(entry->waiting_need, lease_cap(entry->limit, entry->spec)));
    max_age = entry->spec.max_age;
  }
  if (!leftover) return send_acquire(&shard, entry, size, need, given, max_age, false);
  // The leftover first, then the new lease: a bucket refunds only a key nothing touched since
  // the charge (docs/SPEC.md §2.1), and this process's own new charge would be such a touch.
  give_back(std::move(leftover->id), leftover->used, leftover->unused, leftover->at,
            [this, shard = &shard, entry, size, need, given, max_age] {
              send_acquire(shard, entry, size, need, given, max_age, false);
            });
}

void LeaseStore::send_acquire(Shard* shard, Entry* entry, std::int64_t size, std::int64_t need,
                              std::optional<Micros> given, Micros max_age, bool retried) {
  std::string id = new_reservation_id();
  const ReservedLayer layers[] = {{.label = "lease", .metered = false}};
  const auto ttl = std::chrono::milliseconds((max_age + 999) / 1000) + options_.return_grace;
  const ReserveSpec spec{.id = id, .ttl = ttl, .layers = layers};
  const KeyedLimit one[] = {{entry->key, &entry->limit, size}};
  const Micros sent = time(given);
  auto request = StoreRequest::make_reserve(one, size, given, spec);
  if (!request) {
    std::vector<std::function<void(Result<void>)>> waiters;
    {
      std::lock_guard lock(shard->mutex);
      entry->acquiring = false;
      entry->waiting_need = 0;
      waiters.swap(entry->waiters);
    }
    for (auto& w : waiters) w(std::unexpected(request.error()));
    return;
  }
  acquire_calls_.fetch_add(1, std::memory_order_relaxed);
  inner().decide(*request, [this, shard, entry, size, need, given, sent, max_age, retried,
                            id = std::move(id)](Result<Decisions> got) mutable {
    std::vector<std::function<void(Result<void>)>> waiters;
    if (got && !(*got)[0].allowed && !retried && size > need && (*got)[0].retry_after != kNever) {
      // Less than asked for is left: ask once more for what is left (at least the need).
      const std::int64_t smaller = std::max(need, std::min(size - 1, (*got)[0].remaining));
      send_acquire(shard, entry, smaller, need, given, max_age, true);
      return;
    }
    {
      std::lock_guard lock(shard->mutex);
      entry->acquiring = false;
      entry->waiting_need = 0;
      waiters.swap(entry->waiters);
      if (got) {
        const Decision& d = (*got)[0];
        if (d.allowed) {
          entry->id = std::move(id);
          entry->granted = size;
          entry->used = 0;
          entry->acquired = sent;
          entry->expires = sent + lease_horizon(entry->limit, entry->spec, d);
          entry->shared = d;
          entry->given_time = given.has_value();
          ++entry->generation;
          entry->denied_cost = 0;
          entry->denied_forever = false;
          held_.fetch_add(size, std::memory_order_relaxed);
        } else {
          entry->denied_cost = size;
          entry->denied_forever = d.retry_after == kNever;
          entry->denied_until = sent + std::max<Micros>(0, d.retry_after);
          entry->denial = d;
        }
      }
    }
    Result<void> result;
    if (!got) result = std::unexpected(got.error());
    for (auto& w : waiters) w(result);
  });
}

void LeaseStore::give_back(std::string id, std::int64_t used, std::int64_t unused,
                           std::optional<Micros> now, std::function<void()> then) {
  return_calls_.fetch_add(1, std::memory_order_relaxed);
  returns_in_flight_.fetch_add(1, std::memory_order_relaxed);
  Settlement settlement{.id = id, .cancel = used == 0, .cost = used, .now = now};
  inner().settle(settlement, [this, unused, then = std::move(then)](Result<Settled> settled) {
    std::int64_t refunded = 0;
    if (settled) {
      for (const SettledLayer& layer : *settled) refunded += layer.refunded;
    }
    refunded = std::clamp<std::int64_t>(refunded, 0, unused);
    returned_.fetch_add(refunded, std::memory_order_relaxed);
    lost_.fetch_add(unused - refunded, std::memory_order_relaxed);
    {
      std::lock_guard lock(stop_mutex_);
      returns_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
    stop_cv_.notify_all();
    if (then) then();
  });
}

void LeaseStore::sweep(std::optional<Micros> at) {
  const Micros now = time(at);
  std::vector<Leftover> leftovers;
  for (std::size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mutex);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      Entry& entry = it->second;
      if (entry.acquiring || entry.borrowers > 0) {
        ++it;
        continue;
      }
      if (!entry.id.empty() && now >= entry.expires) {
        if (auto leftover = end_lease(entry, now)) {
          held_.fetch_sub(leftover->unused, std::memory_order_relaxed);
          leftovers.push_back(std::move(*leftover));
        }
      }
      const bool idle = entry.id.empty() && !entry.denied_forever && now >= entry.denied_until &&
                        now - entry.last_seen >= kIdleLeaseAges * entry.spec.max_age;
      it = idle ? shard.entries.erase(it) : std::next(it);
    }
  }
  for (Leftover& l : leftovers) give_back(std::move(l.id), l.used, l.unused, l.at);
}

void LeaseStore::clear_caches() {
  for (std::size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mutex);
    for (auto& [key, entry] : shard.entries) {
      entry.denied_until = 0;
      entry.denied_forever = false;
    }
  }
  inner().clear_caches();
}

void LeaseStore::release_all(std::chrono::milliseconds timeout) {
  std::vector<Leftover> leftovers;
  const Micros now = clock_->now();
  for (std::size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mutex);
    for (auto& [key, entry] : shard.entries) {
      if (entry.acquiring) continue;
      // A lease charged at a given time ends at its own latest time, not the clock's.
      const Micros end = entry.given_time ? std::max(entry.acquired, entry.last_seen) : now;
      if (auto leftover = end_lease(entry, end)) {
        held_.fetch_sub(leftover->unused, std::memory_order_relaxed);
        leftovers.push_back(std::move(*leftover));
      }
    }
  }
  for (Leftover& l : leftovers) give_back(std::move(l.id), l.used, l.unused, l.at);
  std::unique_lock lock(stop_mutex_);
  stop_cv_.wait_for(lock, timeout,
                    [this] { return returns_in_flight_.load(std::memory_order_relaxed) == 0; });
}

LeaseStore::Counts LeaseStore::counts() const {
  return {.held = held_.load(std::memory_order_relaxed),
          .used = used_.load(std::memory_order_relaxed),
          .returned = returned_.load(std::memory_order_relaxed),
          .lost = lost_.load(std::memory_order_relaxed),
          .acquire_calls = acquire_calls_.load(std::memory_order_relaxed),
          .return_calls = return_calls_.load(std::memory_order_relaxed),
          .local_decisions = local_.load(std::memory_order_relaxed)};
}

void LeaseStore::append_metrics(std::string& out) const {
  inner().append_metrics(out);
  const Counts c = counts();
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
