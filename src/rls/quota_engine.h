// Envoy's Rate Limit Quota Service (RLQS, docs/SPEC.md §9.7) as plain values: one stream's
// usage reports in, quota assignments out, on any Store. No protobuf here (src/grpc converts).
//
// A bucket (its BucketId's key/value pairs, sorted by key) is a descriptor of the stream's domain:
// the same rules file and the same shared key as ShouldRateLimit (rls_match.h), so RLS calls and
// RLQS quotas count against one limit. For a limited bucket, each report gets a token bucket
// assignment sized to that Envoy's demand: `n` tokens (about 1.25 × the requests it saw per
// assignment time, at most what the limit gives in that time), refilled n per fill interval,
// for `ttl` (twice the report interval, 1 s .. 60 s). Before an assignment is sent, the units it
// can admit are charged to the shared key — quota leases handed to Envoy (§2.3): n for a new
// bucket (it starts full) plus the refill from the end of what was charged before until the new
// expiry — so the Envoys together never admit more than the algorithm admitted to those charges.
// A demand within a quarter of the bucket in force keeps it (extended: only the refill is
// charged). When the shared key has less left than a new bucket costs, the bucket in force is
// extended instead, else a smaller one is made (half of what is left: a new bucket costs twice
// its size) and, with nothing left, DENY_ALL. No rule or an unknown domain:
// ALLOW_ALL; `unlimited`: ALLOW_ALL; requests_per_unit 0: DENY_ALL; a bucket naming a caller
// whose tenant record is blocked (rls.tenant_key): DENY_ALL, nothing charged.
//
// The bound holds while Envoy does as the protocol says: an assignment with the same strategy
// extends the bucket in force (it is not refilled), and an expired one falls back to the
// Envoy's own expired_assignment_behavior (configure it to deny, or the bound is the Envoy's).
//
// Thread safety: a QuotaStream is used by one stream at a time (calls in sequence); the
// QuotaService is shared. Ownership: the service uses `store`, which outlives it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spillway/clock.h"
#include "spillway/store.h"
#include "src/config/config.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_request.h"
#include "src/rls/tenant_gate.h"

namespace spillway::rls {

inline constexpr Micros kMinQuotaTtl = 1'000'000;      // 1 s
inline constexpr Micros kMaxQuotaTtl = 60'000'000;     // 60 s
inline constexpr std::size_t kMaxQuotaBuckets = 1024;  // per report

// One bucket's usage since its previous report.
struct QuotaUsage {
  std::vector<RlsEntry> bucket;  // the BucketId's pairs, any order
  Micros elapsed = 0;            // µs, > 0
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
};

enum class QuotaStrategy { kAllowAll, kDenyAll, kTokenBucket };

// What one bucket is told.
struct QuotaAssignment {
  std::vector<RlsEntry> bucket;  // as reported
  QuotaStrategy strategy = QuotaStrategy::kAllowAll;
  std::uint32_t max_tokens = 0;       // kTokenBucket: the bucket's size, and
  std::uint32_t tokens_per_fill = 0;  // what it gains
  Micros fill_interval = 0;           // every this long
  Micros ttl = 0;                     // the assignment's time to live
  friend bool operator==(const QuotaAssignment&, const QuotaAssignment&) = default;
};

class QuotaService {
 public:
  // `rules` gives the rules in force at each report (a reload swaps them).
  // `tenants`: a bucket naming a blocked caller (tenant_gate.h) is DENY_ALL, nothing charged.
  QuotaService(Store& store, std::function<std::shared_ptr<const RlsRules>()> rules,
               policy::RlsOnError on_error, std::shared_ptr<const Clock> clock = nullptr,
               TenantGate tenants = {});

  Store& store() const { return store_; }
  std::shared_ptr<const RlsRules> rules() const { return rules_(); }
  policy::RlsOnError on_error() const { return on_error_; }
  Micros now() const { return clock_->now(); }
  const TenantGate& tenants() const { return tenants_; }

 private:
  Store& store_;
  std::function<std::shared_ptr<const RlsRules>()> rules_;
  policy::RlsOnError on_error_;
  std::shared_ptr<const Clock> clock_;
  TenantGate tenants_;
};

// One RLQS stream: its domain and, per bucket, the assignment in force.
class QuotaStream {
 public:
  explicit QuotaStream(const QuotaService& service) : service_(service) {}

  using Done = std::function<void(Result<std::vector<QuotaAssignment>>)>;
  // One report: `domain` is the report's (empty after the first). Errors (kInvalidArgument, the
  // stream should end): no domain in the first report, another domain later, no bucket, more
  // than kMaxQuotaBuckets, a bucket without pairs or with an empty key or value, a time_elapsed
  // not above 0. `done` runs once, possibly on another thread.
  void report(std::string_view domain, std::vector<QuotaUsage> usages, Done done);

  const std::string& domain() const { return domain_; }

 private:
  struct Bucket {
    std::uint32_t tokens = 0;
    Micros fill_interval = 0;
    Micros charged_until = 0;  // the refill was charged up to here (the assignment's expiry)
  };
  struct Report;
  void next(std::shared_ptr<Report> report);
  // Assigns a token bucket to the limited bucket at report->index (stages: quota_engine.cc).
  void limited(std::shared_ptr<Report> report, const Limit& limit, std::string key, Micros ttl,
               std::uint32_t want, int stage, std::int64_t left);
  void deny(std::shared_ptr<Report> report, const std::string& key, Micros ttl);

  const QuotaService& service_;
  std::string domain_;
  std::map<std::string, Bucket> buckets_;  // by shared key
};

}  // namespace spillway::rls
