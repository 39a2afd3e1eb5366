// QuotaService and QuotaStream (src/rls/quota_engine.h): one stream's usage reports in,
// token-bucket assignments out. A report's buckets are matched against the rules, each limited
// bucket is given its share (sizes: src/rls/quota_sizing.h) and charged to the shared key as a
// reservation before its assignment is sent; ended, replaced or abandoned buckets' unused tokens
// are settled back. The counters are QuotaStats (quota_stats.cc). Thread safety: a QuotaStream is
// used by one stream at a time; the store's callbacks continue it.
#include "src/rls/quota_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "src/config/error_answer.h"
#include "src/policy/plan.h"
#include "src/rls/quota_sizing.h"
#include "src/rls/rls_engine.h"
#include "src/rls/rls_match.h"

namespace spillway::rls {

QuotaService::QuotaService(Store& store, std::function<std::shared_ptr<const RlsRules>()> rules,
                           policy::RlsOnError on_error, std::shared_ptr<const Clock> clock,
                           TenantGate tenants, std::shared_ptr<QuotaShares> shares)
    : store_(store),
      rules_(std::move(rules)),
      on_error_(on_error),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      tenants_(std::move(tenants)),
      shares_(shares ? std::move(shares) : std::make_shared<LocalQuotaShares>(clock_)),
      stats_(std::make_unique<QuotaStats>()) {}

struct QuotaStream::Report {
  std::vector<QuotaUsage> usages;
  std::shared_ptr<const RlsRules> rules;
  std::size_t index = 0;
  std::vector<QuotaAssignment> answers;
  Done done;
};

namespace {

std::unexpected<Error> bad_report(std::string message) {
  return std::unexpected(Error{Errc::kInvalidArgument, std::move(message), "bucket_quota_usages"});
}

// The same bucket named twice in one report is one bucket: its counts summed, the longer elapsed.
std::string bucket_name(std::vector<RlsEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const RlsEntry& a, const RlsEntry& b) { return a.key < b.key; });
  std::string name;
  for (const RlsEntry& e : entries) name += e.key + '\0' + e.value + '\0';
  return name;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

}  // namespace

QuotaStream::QuotaStream(const QuotaService& service)
    : service_(service), id_(new_reservation_id()) {}

QuotaStream::~QuotaStream() {
  for (auto& [key, bucket] : buckets_) leave(key, bucket);
}

void QuotaStream::report(std::string_view domain, std::vector<QuotaUsage> usages, Done done) {
  if (domain_.empty()) {
    if (domain.empty())
      return done(bad_report("the first report of a stream must name its domain"));
    domain_ = std::string(domain);
  } else if (!domain.empty() && domain != domain_) {
    return done(bad_report("the stream's domain is \"" + domain_ +
                           "\": a report cannot change it (open another stream)"));
  }
  if (usages.empty()) return done(bad_report("a report needs at least one bucket"));
  if (usages.size() > kMaxQuotaBuckets) {
    return done(bad_report("a report may carry at most " + std::to_string(kMaxQuotaBuckets) +
                           " buckets (got " + std::to_string(usages.size()) + ")"));
  }
  for (std::size_t i = 0; i < usages.size(); ++i) {
    const QuotaUsage& usage = usages[i];
    const std::string at = "bucket_quota_usages[" + std::to_string(i) + "]";
    if (usage.bucket.empty() || usage.bucket.size() > kMaxEntries) {
      return done(
          bad_report(at + ".bucket_id must have 1 to " + std::to_string(kMaxEntries) + " pairs"));
    }
    for (const RlsEntry& entry : usage.bucket) {
      if (entry.key.empty() || entry.value.empty()) {
        return done(bad_report(at + ".bucket_id has an empty key or value"));
      }
    }
    if (usage.elapsed < 0) return done(bad_report(at + ".time_elapsed must not be negative"));
  }
  std::vector<QuotaUsage> merged;
  std::map<std::string, std::size_t> seen;
  for (QuotaUsage& usage : usages) {
    auto [at, fresh] = seen.emplace(bucket_name(usage.bucket), merged.size());
    if (fresh) {
      merged.push_back(std::move(usage));
      continue;
    }
    QuotaUsage& into = merged[at->second];
    into.allowed = saturating_add(into.allowed, usage.allowed);
    into.denied = saturating_add(into.denied, usage.denied);
    into.elapsed = std::max(into.elapsed, usage.elapsed);
  }
  auto state = std::make_shared<Report>();
  state->usages = std::move(merged);
  state->rules = service_.rules();
  state->done = std::move(done);
  next(std::move(state));
}

void QuotaStream::next(std::shared_ptr<Report> report) {
  while (report->index < report->usages.size()) {
    const QuotaUsage& usage = report->usages[report->index];
    std::vector<RlsEntry> sorted = usage.bucket;
    std::sort(sorted.begin(), sorted.end(),
              [](const RlsEntry& a, const RlsEntry& b) { return a.key < b.key; });
    // The time since this bucket's last report: the server's own clock (time_elapsed is whole
    // seconds, 0 under 1 s), at least what Envoy says; for a bucket new to this stream what
    // Envoy says (0 for a bucket new to Envoy: its demand is not known yet).
    const Micros now = service_.now();
    std::string key = rls_key(domain_, sorted);
    if (buckets_.size() >= kMaxQuotaStreamBuckets && !buckets_.contains(key)) {
      // Past what one stream may hold (idle buckets are abandoned): not kept, nothing charged.
      report->answers.push_back(
          {.bucket = usage.bucket, .strategy = QuotaStrategy::kDenyAll, .ttl = kMinQuotaTtl});
      ++report->index;
      continue;
    }
    Bucket& held = buckets_[key];
    const Micros gap =
        held.last_report < 0 ? usage.elapsed : std::max(now - held.last_report, usage.elapsed);
    held.last_report = now;
    interval_ = std::max(interval_, gap);
    Micros ttl = ttl_for(interval_);
    // The report's requests were admitted by the bucket in force since the last report.
    const auto allowed =
        static_cast<std::int64_t>(std::min<std::uint64_t>(usage.allowed, 1ULL << 52));
    held.used += allowed;
    if (usage.allowed == 0 && usage.denied == 0) {
      if (held.idle_reports++ == 0) held.idle_since = now - gap;
    } else {
      held.idle_reports = 0;
      held.idle_since = -1;
    }
    if (held.idle_reports >= kQuotaIdleReports && now - held.idle_since >= kQuotaIdleTime) {
      // Idle: Envoy forgets the bucket (and makes it again at its next request); its share and
      // what it did not use come back.
      close(held);
      leave(key, held);
      buckets_.erase(key);
      report->answers.push_back({.bucket = usage.bucket, .strategy = QuotaStrategy::kAbandon});
      ++report->index;
      continue;
    }
    QuotaAssignment answer{.bucket = usage.bucket, .ttl = ttl};
    const DomainRules* domain = nullptr;
    if (report->rules) {
      auto found = report->rules->domains.find(domain_);
      if (found != report->rules->domains.end()) domain = &found->second;
    }
    const Match match = domain ? match_descriptor(*domain, sorted) : Match{};
    const RuleLimit* rule =
        match.rule != nullptr && match.rule->rate_limit ? &*match.rule->rate_limit : nullptr;
    const bool blocked = service_.tenants().blocked(usage.bucket);
    if (blocked || rule == nullptr || rule->unlimited || !rule->limit) {
      // A blanket rule: Envoy drops the token bucket it held, and this stream its share.
      close(held);
      leave(key, held);
      held.tokens = 0;
      if (blocked) {
        answer.strategy = QuotaStrategy::kDenyAll;  // a blocked caller: nothing charged
      } else if (rule == nullptr || rule->unlimited) {
        answer.strategy = QuotaStrategy::kAllowAll;  // no limit applies
      } else {
        answer.strategy = QuotaStrategy::kDenyAll;  // requests_per_unit 0
      }
      report->answers.push_back(std::move(answer));
      ++report->index;
      continue;
    }
    service_.stats().add(domain_, match.stat_path, QuotaStats::kUsed, allowed);
    const Limit& limit = *rule->limit;
    const Micros fill = whole_seconds(limit.period());
    if (interval_ <= 0) ttl = first_ttl(limit, fill);
    if (held.path != match.stat_path) {
      leave(key, held);
      held.path = match.stat_path;
    }
    const std::int64_t demand =
        held.demand.add(saturating_add(usage.allowed, usage.denied), gap, fill);
    return share(std::move(report), limit, std::move(key), ttl, fill, demand);
  }
  Done done = std::move(report->done);
  done(std::move(report->answers));
}

void QuotaStream::share(std::shared_ptr<Report> report, const Limit& limit, std::string key,
                        Micros ttl, Micros fill, std::int64_t demand) {
  Bucket& held = buckets_[key];
  if (!held.member) {
    held.member = true;
    service_.stats().add(domain_, held.path, QuotaStats::kHolders, 1);
  }
  const Limit copy = limit;
  const std::string bucket = key;
  service_.shares().exchange(
      bucket, id_, demand, ttl + kQuotaGrace,
      [this, report = std::move(report), copy, key = std::move(key), ttl, fill,
       demand](Result<std::vector<std::int64_t>> demands) mutable {
        const QuotaSizing size = sizing_for(copy, ttl, fill);
        // Without the others' demands (the backend failed), this Envoy's own: the charge still
        // bounds what all of them admit.
        const std::vector<std::int64_t> alone = {demand};
        const double given = max_min_share(size.rate, demands ? *demands : alone, size.start);
        const auto want = static_cast<std::uint32_t>(std::clamp(std::floor(given), 1.0, size.most));
        limited(std::move(report), copy, std::move(key), ttl, fill, want, 0, 0);
      });
}

// The candidates, in order (stage), each tried when the one before was denied (`left`: what the
// shared key had left then): 0, the fair share's size — or the bucket in force when it is within
// a tenth of it (then straight on to 2 if denied: no new bucket for small changes, each costs a
// full one); 1, the largest new bucket `left` pays for when that is more than the bucket in force;
// 2, the bucket in force, extended; 3, the largest new bucket `left` pays for, however small;
// then DENY_ALL.
void QuotaStream::limited(std::shared_ptr<Report> report, const Limit& limit, std::string key,
                          Micros ttl, Micros fill, std::uint32_t want, int stage,
                          std::int64_t left) {
  const Micros now = service_.now();
  const Bucket& known = buckets_[key];
  // Envoy still holds the bucket in force when this answer reaches it (its expiry was armed a
  // trip after ours): then an equal assignment extends it, tokens and all.
  const bool alive = known.tokens > 0 && now + 2 * kQuotaGrace < known.charged_until;
  const std::uint32_t current = alive ? known.tokens : 0;
  const Micros until = now + ttl + kQuotaGrace;
  const QuotaCost cost{.ttl = ttl, .fill = fill, .span = until - now};
  const std::int64_t fits = stage == 0 ? 0 : std::min<std::int64_t>(want, cost.fit(left));
  std::uint32_t tokens = 0;
  if (stage == 0) {
    const bool close_enough =
        alive && std::abs(static_cast<double>(want) - current) * 10 <= static_cast<double>(want);
    tokens = close_enough ? current : want;
    if (close_enough) stage = 2;
  }
  if (stage == 1) {
    if (fits > current) {
      tokens = static_cast<std::uint32_t>(fits);
    } else {
      stage = 2;
    }
  }
  if (stage == 2 && tokens == 0) {
    if (alive) {
      tokens = current;
    } else {
      stage = 3;
    }
  }
  if (stage == 3) {
    if (fits < 1) return deny(std::move(report), key, ttl);
    tokens = static_cast<std::uint32_t>(fits);
  }
  const bool same = alive && tokens == current;
  // Envoy compares max_tokens, tokens_per_fill and fill_interval.nanos (always 0 here): the same
  // bucket keeps its size and the fill interval in force, which is what Envoy keeps refilling at.
  const std::uint32_t size = same ? known.max_tokens : cost.size(tokens);
  if (same) fill = known.fill_interval;
  // A new bucket starts full (size); the refill, tokens per fill seconds, is charged from where
  // the last charge ended to the expiry Envoy arms (a trip after now) — whole seconds as it reads.
  // The same bucket again pays what its whole refill up to the new expiry, rounded up once, adds
  // to what it paid (rounding each report's part up would overcharge a token per report).
  const Micros from = same ? std::max(known.charged_until, now) : now;
  const std::int64_t refill =
      same ? std::max<std::int64_t>(0, QuotaCost::refill(tokens, fill, until - known.refill_start) -
                                           known.refill_charged)
           : QuotaCost::refill(tokens, fill, until - from);
  const std::int64_t charge = (same ? 0 : std::int64_t{size}) + refill;
  // Kept as a reservation until it is settled (the next reports), at most a day past its span.
  const Micros keep =
      (until - now) + 2 * std::max<Micros>(interval_, kMicrosPerSecond) + 10 * kMicrosPerSecond;
  auto held_charge = std::make_shared<Charge>(Charge{.id = new_reservation_id(),
                                                     .estimate = charge,
                                                     .size = same ? 0 : std::int64_t{size},
                                                     .from = from,
                                                     .until = until});
  // One reservation of the bucket's key, through the one executor (src/policy/plan.h).
  static constexpr ReservedLayer kLayer{.label = "rlqs"};
  struct Owned {
    Limit limit;
    std::string key;
    std::string id;
    ReserveSpec reserve;
    policy::Plan plan;
  };
  auto owned = std::make_shared<Owned>(Owned{.limit = limit, .key = key, .id = held_charge->id});
  owned->reserve = ReserveSpec{.id = owned->id,
                               .ttl = std::chrono::milliseconds(keep / 1000),
                               .layers = std::span<const ReservedLayer>(&kLayer, 1)};
  owned->plan.cost = charge;
  owned->plan.reserve = &owned->reserve;
  owned->plan.items.push_back({.key = owned->key, .limit = &owned->limit});
  const Limit copy = limit;
  auto answered = [this, report, copy, key, ttl, fill, tokens, size, want, stage, until, same,
                   held_charge](Result<policy::Outcome> decided) mutable {
    const bool ok = decided.has_value();
    const Decision* d = ok ? &*decided->items.front().decision : nullptr;
    if (ok && !d->allowed && stage < 3) {
      return limited(std::move(report), copy, std::move(key), ttl, fill, want, stage + 1,
                     d->remaining);
    }
    if (ok && !d->allowed) return deny(std::move(report), key, ttl);
    const QuotaUsage& usage = report->usages[report->index];
    QuotaAssignment answer{.bucket = usage.bucket, .ttl = ttl};
    Bucket& held = buckets_[key];
    if (!ok) {
      // The backend failed: rls.on_error says what Envoy is told, for the shortest time.
      // A request the store refused is answered as a failure too: Envoy sent nothing wrong.
      const policy::ErrorAnswer said = policy::answer_error(decided.error(), service_.on_error());
      const bool allow = said == policy::ErrorAnswer::kAllow ||
                         (said == policy::ErrorAnswer::kInvalid &&
                          service_.on_error() == policy::RlsOnError::kAllow);
      answer.strategy = allow ? QuotaStrategy::kAllowAll : QuotaStrategy::kDenyAll;
      answer.ttl = kMinQuotaTtl;
      close(held);
      held.tokens = 0;
    } else {
      if (!same) {
        close(held);  // Envoy replaces its bucket: the old one's charges settle
        held.refill_start = held_charge->from;
        held.refill_charged = 0;
      }
      held.refill_charged += held_charge->estimate - held_charge->size;
      held.open.push_back(std::move(*held_charge));
      held.tokens = tokens;
      held.max_tokens = size;
      held.fill_interval = fill;
      held.charged_until = until;
      service_.stats().add(domain_, held.path, QuotaStats::kAssigned, held.open.back().estimate);
      if (same) give_back_lost(held, service_.now());
      answer.strategy = QuotaStrategy::kTokenBucket;
      answer.max_tokens = size;
      answer.tokens_per_fill = tokens;
      answer.fill_interval = fill;
    }
    report->answers.push_back(std::move(answer));
    ++report->index;
    next(std::move(report));
  };
  std::shared_ptr<const policy::Plan> plan(owned, &owned->plan);
  policy::execute(service_.store(), std::move(plan), std::move(answered));
}

void QuotaStream::deny(std::shared_ptr<Report> report, const std::string& key, Micros ttl) {
  Bucket& held = buckets_[key];
  close(held);  // Envoy drops its token bucket for DENY_ALL; it still asks (keeps its share)
  held.tokens = 0;
  report->answers.push_back({.bucket = report->usages[report->index].bucket,
                             .strategy = QuotaStrategy::kDenyAll,
                             .ttl = ttl});
  ++report->index;
  next(std::move(report));
}

void QuotaStream::close(Bucket& bucket) {
  std::int64_t left = bucket.used - bucket.settled;  // what the open charges were used for
  for (std::size_t i = 0; i < bucket.open.size(); ++i) {
    const Charge& c = bucket.open[i];
    std::int64_t actual = std::min(c.estimate, std::max<std::int64_t>(0, left));
    if (i + 1 == bucket.open.size()) actual = std::max(actual, left);  // used past it: debt
    left -= actual;
    settle(bucket.path, c, actual);
  }
  bucket.open.clear();
  bucket.used = 0;
  bucket.settled = 0;
}

void QuotaStream::give_back_lost(Bucket& bucket, Micros now) {
  // Produced by now: what settled charges kept, and of each open one its size and its refill
  // up to now. Envoy holds at most max_tokens of what it did not use: the rest is lost to it.
  std::int64_t produced = bucket.settled;
  for (const Charge& c : bucket.open) {
    const std::int64_t refill = QuotaCost::refill(
        bucket.tokens, bucket.fill_interval, std::clamp<Micros>(now - c.from, 0, c.until - c.from));
    produced += std::min(c.estimate, c.size + refill);
  }
  std::int64_t lost = produced - bucket.used - std::int64_t{bucket.max_tokens};
  // Charges wholly produced are settled (what is lost given back, oldest first) or retired.
  while (!bucket.open.empty() && bucket.open.front().until <= now) {
    const Charge c = bucket.open.front();
    const std::int64_t back = std::clamp<std::int64_t>(lost, 0, c.estimate);
    if (back > 0) settle(bucket.path, c, c.estimate - back);
    lost -= back;
    bucket.settled += c.estimate - back;
    bucket.open.erase(bucket.open.begin());
  }
}

void QuotaStream::settle(const std::string& path, const Charge& charge, std::int64_t actual) {
  if (actual == charge.estimate) return;  // nothing to give back: it expires, charge kept
  auto id = std::make_shared<const std::string>(charge.id);
  service_.store().settle(
      Settlement{.id = *id, .cost = std::max<std::int64_t>(0, actual)},
      [stats = &service_.stats(), domain = domain_, path, id](Result<Settled> settled) {
        if (settled && !settled->empty()) {
          stats->add(domain, path, QuotaStats::kRefunded, settled->front().refunded);
        }
      });
}

void QuotaStream::leave(const std::string& key, Bucket& bucket) {
  if (!bucket.member) return;
  bucket.member = false;
  service_.shares().leave(key, id_);
  service_.stats().add(domain_, bucket.path, QuotaStats::kHolders, -1);
}

}  // namespace spillway::rls
