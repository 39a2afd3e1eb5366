#include "src/rls/quota_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "src/rls/rls_engine.h"
#include "src/rls/rls_match.h"

namespace spillway::rls {

QuotaService::QuotaService(Store& store, std::function<std::shared_ptr<const RlsRules>()> rules,
                           policy::RlsOnError on_error, std::shared_ptr<const Clock> clock,
                           TenantGate tenants)
    : store_(store),
      rules_(std::move(rules)),
      on_error_(on_error),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      tenants_(std::move(tenants)) {}

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

// The assignment's time to live: twice the report interval, within [1 s, 60 s].
Micros ttl_for(Micros elapsed) {
  return std::clamp<Micros>(elapsed > kMaxQuotaTtl ? kMaxQuotaTtl : 2 * elapsed, kMinQuotaTtl,
                            kMaxQuotaTtl);
}

// About 1.25 × the requests seen, scaled to `ttl`, at least 1, at most what the limit gives in
// ttl, half the largest charge the limit can take (L, or B for the buckets: a new bucket costs
// twice its size) and what a uint32 holds.
std::uint32_t tokens_for(const QuotaUsage& usage, const Limit& limit, Micros ttl) {
  const double seen = static_cast<double>(usage.allowed) + static_cast<double>(usage.denied);
  const double want =
      std::ceil(seen * 1.25 * static_cast<double>(ttl) / static_cast<double>(usage.elapsed));
  const double ceiling =
      std::max(1.0, std::floor(static_cast<double>(limit.limit()) * static_cast<double>(ttl) /
                               static_cast<double>(limit.period())));
  const double largest =
      static_cast<double>(takes_burst(limit.algorithm()) ? limit.burst() : limit.limit());
  const double most =
      std::max(1.0, std::min({ceiling, std::floor(largest / 2),
                              static_cast<double>(std::numeric_limits<std::uint32_t>::max())}));
  return static_cast<std::uint32_t>(std::clamp(want, 1.0, most));
}

}  // namespace

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
    if (usage.elapsed <= 0) return done(bad_report(at + ".time_elapsed must be above 0"));
  }
  auto state = std::make_shared<Report>();
  state->usages = std::move(usages);
  state->rules = service_.rules();
  state->done = std::move(done);
  next(std::move(state));
}

void QuotaStream::next(std::shared_ptr<Report> report) {
  while (report->index < report->usages.size()) {
    const QuotaUsage& usage = report->usages[report->index];
    const Micros ttl = ttl_for(usage.elapsed);
    QuotaAssignment answer{.bucket = usage.bucket, .ttl = ttl};
    std::vector<RlsEntry> sorted = usage.bucket;
    std::sort(sorted.begin(), sorted.end(),
              [](const RlsEntry& a, const RlsEntry& b) { return a.key < b.key; });
    const DomainRules* domain = nullptr;
    if (report->rules) {
      auto found = report->rules->domains.find(domain_);
      if (found != report->rules->domains.end()) domain = &found->second;
    }
    const Match match = domain ? match_descriptor(*domain, sorted) : Match{};
    const RuleLimit* rule =
        match.rule != nullptr && match.rule->rate_limit ? &*match.rule->rate_limit : nullptr;
    if (service_.tenants().blocked(usage.bucket)) {
      answer.strategy = QuotaStrategy::kDenyAll;  // a blocked caller: nothing charged
    } else if (rule == nullptr || rule->unlimited) {
      answer.strategy = QuotaStrategy::kAllowAll;  // no limit applies
    } else if (!rule->limit) {
      answer.strategy = QuotaStrategy::kDenyAll;  // requests_per_unit 0
    } else {
      return limited(std::move(report), *rule->limit, rls_key(domain_, sorted), ttl,
                     tokens_for(usage, *rule->limit, ttl), 0, 0);
    }
    report->answers.push_back(std::move(answer));
    ++report->index;
  }
  Done done = std::move(report->done);
  done(std::move(report->answers));
}

// The candidates, in order (stage), each tried when the one before was denied (`left`: what the
// shared key had left then): 0, the demand's size — or the bucket in force when the demand is
// within a quarter of it (then straight on to 2 if denied: no new bucket for small changes, each
// costs a full one); 1, a new bucket of half of `left` (a new bucket costs twice its size) when
// that is more than the bucket in force; 2, the bucket in force, extended; 3, a new bucket of half
// of `left`, however small; then DENY_ALL.
void QuotaStream::limited(std::shared_ptr<Report> report, const Limit& limit, std::string key,
                          Micros ttl, std::uint32_t want, int stage, std::int64_t left) {
  const Micros now = service_.now();
  auto known = buckets_.find(key);
  const bool alive = known != buckets_.end() && known->second.fill_interval == ttl &&
                     now < known->second.charged_until;
  const std::uint32_t current = alive ? known->second.tokens : 0;
  const std::int64_t half = std::min<std::int64_t>(want, left / 2);
  std::uint32_t tokens = 0;
  if (stage == 0) {
    const bool close = alive && std::abs(static_cast<double>(want) - current) * 4 <= current;
    tokens = close ? current : want;
    if (close) stage = 2;
  }
  if (stage == 1) {
    if (half > current) {
      tokens = static_cast<std::uint32_t>(half);
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
    if (half < 1) return deny(std::move(report), key, ttl);
    tokens = static_cast<std::uint32_t>(half);
  }
  const bool same = alive && tokens == current;
  // A new bucket starts full (tokens); the refill is charged from where the last charge ended.
  const Micros from = same ? std::max(known->second.charged_until, now) : now;
  const Micros until = now + ttl;
  const std::int64_t refill = static_cast<std::int64_t>(std::ceil(
      static_cast<double>(tokens) * static_cast<double>(until - from) / static_cast<double>(ttl)));
  const std::int64_t charge = (same ? 0 : std::int64_t{tokens}) + std::max<std::int64_t>(0, refill);
  const Limit copy = limit;
  service_.store().check_async(
      key, copy, charge, std::nullopt,
      [this, report, copy, key, ttl, tokens, want, stage, until](Result<Decision> decided) mutable {
        if (decided && !decided->allowed && stage < 3) {
          return limited(std::move(report), copy, std::move(key), ttl, want, stage + 1,
                         decided->remaining);
        }
        if (decided && !decided->allowed) return deny(std::move(report), key, ttl);
        const QuotaUsage& usage = report->usages[report->index];
        QuotaAssignment answer{.bucket = usage.bucket, .ttl = ttl};
        if (!decided) {
          // The backend failed: rls.on_error says what Envoy is told, for the shortest time.
          answer.strategy = service_.on_error() == policy::RlsOnError::kAllow
                                ? QuotaStrategy::kAllowAll
                                : QuotaStrategy::kDenyAll;
          answer.ttl = kMinQuotaTtl;
        } else {
          buckets_[key] = {.tokens = tokens, .fill_interval = ttl, .charged_until = until};
          answer.strategy = QuotaStrategy::kTokenBucket;
          answer.max_tokens = tokens;
          answer.tokens_per_fill = tokens;
          answer.fill_interval = ttl;
        }
        report->answers.push_back(std::move(answer));
        ++report->index;
        next(std::move(report));
      });
}

void QuotaStream::deny(std::shared_ptr<Report> report, const std::string& key, Micros ttl) {
  buckets_.erase(key);
  report->answers.push_back({.bucket = report->usages[report->index].bucket,
                             .strategy = QuotaStrategy::kDenyAll,
                             .ttl = ttl});
  ++report->index;
  next(std::move(report));
}

}  // namespace spillway::rls
