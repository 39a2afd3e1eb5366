// Envoy's Rate Limit Quota Service (RLQS, docs/SPEC.md §9.7) as plain values: one stream's
// usage reports in, quota assignments out, on any Store. No protobuf here (src/grpc converts).
//
// A bucket (its BucketId's key/value pairs, sorted by key) is a descriptor of the stream's domain:
// the same rules file and the same shared key as ShouldRateLimit (rls_match.h), so RLS calls and
// RLQS quotas count against one limit. A limited bucket gets a token bucket in the terms Envoy's
// filter reads (docs/SPEC.md §9.7): every duration whole seconds; `fill_interval` F = the limit's
// period (at least 1 s); `tokens_per_fill` r = the Envoy's max-min fair share, per F, of the limit
// between the Envoys (streams, on every server of the backend: QuotaShares) holding the bucket by
// their demands (what each saw, over at least 1 s of reports: quota_demand.h; a starting size while
// not known), plus an even part of what the shares leave, up to 1.25 × its demand; `max_tokens` =
// what r/F brings in one ttl; ttl = the longest time I seen between two reports of a bucket on the
// stream + max(I/2, 600 ms), rounded up (60 s or less before any is seen). Before an assignment is
// sent, what Envoy can admit under it is charged to the shared key as a reservation — quota leases
// handed to Envoy (§2.3): a changed bucket costs max_tokens (Envoy starts it full) plus its refill
// r/F per second until the expiry (+ kQuotaGrace for the answer's trip); the same bucket again
// costs the refill from the end of the last charge to the new expiry (rounded up once over the
// bucket's life, not per report). What Envoy did not use comes back by settling those reservations
// (§2.1's refund rule): all of what its reports did not use once its bucket is replaced, ended or
// abandoned; while it is extended, what was produced and could no longer be held (more than
// max_tokens past what it used). A share within a tenth of the bucket in force keeps it. When the
// shared key has less left than a new bucket costs, the bucket in force is extended instead, else a
// smaller one, and with nothing left DENY_ALL. A bucket without requests for kQuotaIdleReports
// reports (and 10 s) is abandoned (AbandonAction). No rule or an unknown domain: ALLOW_ALL;
// `unlimited`: ALLOW_ALL; requests_per_unit 0: DENY_ALL; a bucket naming a caller whose tenant
// record is blocked (rls.tenant_key): DENY_ALL, nothing charged.
//
// The bound holds while Envoy does what its filter (global_client_impl.cc) does: an assignment
// whose max_tokens, tokens_per_fill and fill_interval.nanos equal the one in force keeps the
// token bucket (extends it), any other starts a new one at most full; an expired one falls back to
// the Envoy's own expired_assignment_behavior (configure it to deny, or the bound is the Envoy's).
//
// Thread safety: a QuotaStream is used by one stream at a time (calls in sequence); the
// QuotaService is shared. Ownership: the service uses `store`, which outlives it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "spillway/clock.h"
#include "spillway/quota_shares.h"
#include "spillway/store.h"
#include "src/config/config.h"
#include "src/rls/quota_demand.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_request.h"
#include "src/rls/series_by_path.h"
#include "src/rls/tenant_gate.h"

namespace spillway::rls {

inline constexpr Micros kMinQuotaTtl = 1'000'000;             // 1 s (errors' ttl)
inline constexpr Micros kFirstQuotaTtl = 60'000'000;          // before a report interval is seen
inline constexpr Micros kMaxQuotaTtl = 86'400'000'000;        // 1 day
inline constexpr Micros kQuotaGrace = 250'000;                // the answer's trip to Envoy
inline constexpr std::size_t kMaxQuotaBuckets = 1024;         // per report
inline constexpr std::size_t kMaxQuotaStreamBuckets = 65536;  // held by one stream; more: DENY_ALL
inline constexpr int kQuotaIdleReports = 3;                   // reports without requests: abandoned
inline constexpr Micros kQuotaIdleTime = 10'000'000;          // and at least this long (10 s)

// One bucket's usage since its previous report.
struct QuotaUsage {
  std::vector<RlsEntry> bucket;  // the BucketId's pairs, any order
  Micros elapsed = 0;            // µs, >= 0 (0: unset, a new bucket, or under 1 s)
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
};

enum class QuotaStrategy { kAllowAll, kDenyAll, kTokenBucket, kAbandon };

// What one bucket is told.
struct QuotaAssignment {
  std::vector<RlsEntry> bucket;  // as reported
  QuotaStrategy strategy = QuotaStrategy::kAllowAll;
  std::uint32_t max_tokens = 0;       // kTokenBucket: the bucket's size, and
  std::uint32_t tokens_per_fill = 0;  // what it gains
  Micros fill_interval = 0;           // every this long (whole seconds)
  Micros ttl = 0;                     // the assignment's time to live (whole seconds)
  friend bool operator==(const QuotaAssignment&, const QuotaAssignment&) = default;
};

// Per bucket, by domain and the rules' stat path (descriptor values masked as in RlsStats: only
// under detailed_metric; past kMaxSeries the rest count under "_other"): tokens assigned
// (charged for assignments), used (allowed by Envoys' reports), refunded (given back by
// settlements), and the Envoys (streams) holding it now. Thread safety: any thread (one mutex).
class QuotaStats {
 public:
  enum Counter { kAssigned, kUsed, kRefunded, kHolders };
  static constexpr std::size_t kMaxSeries = SeriesByPath<std::int64_t, 4>::kMaxSeries;
  void add(std::string_view domain, std::string_view path, Counter counter, std::int64_t n);
  std::int64_t get(std::string_view domain, std::string_view path, Counter counter) const;
  // spillway_rlqs_tokens_total{domain,bucket,kind="assigned|used|refunded"} and
  // spillway_rlqs_envoys{domain,bucket}.
  void render(std::string& out) const;

 private:
  SeriesByPath<std::int64_t, 4> series_;
};

class QuotaService {
 public:
  // `rules` gives the rules in force at each report (a reload swaps them).
  // `tenants`: a bucket naming a blocked caller (tenant_gate.h) is DENY_ALL, nothing charged.
  // `shares`: where the Envoys' demands meet (every server of the backend); none: this process.
  QuotaService(Store& store, std::function<std::shared_ptr<const RlsRules>()> rules,
               policy::RlsOnError on_error, std::shared_ptr<const Clock> clock = nullptr,
               TenantGate tenants = {}, std::shared_ptr<QuotaShares> shares = nullptr);

  Store& store() const { return store_; }
  std::shared_ptr<const RlsRules> rules() const { return rules_(); }
  policy::RlsOnError on_error() const { return on_error_; }
  Micros now() const { return clock_->now(); }
  const TenantGate& tenants() const { return tenants_; }
  QuotaShares& shares() const { return *shares_; }
  QuotaStats& stats() const { return *stats_; }

 private:
  Store& store_;
  std::function<std::shared_ptr<const RlsRules>()> rules_;
  policy::RlsOnError on_error_;
  std::shared_ptr<const Clock> clock_;
  TenantGate tenants_;
  std::shared_ptr<QuotaShares> shares_;
  std::unique_ptr<QuotaStats> stats_;
};

// One RLQS stream: its domain and, per bucket, the assignment in force.
class QuotaStream {
 public:
  explicit QuotaStream(const QuotaService& service);
  // Leaves the buckets it holds (QuotaShares): Envoy's assignments run on to their expiry, charged.
  ~QuotaStream();
  QuotaStream(const QuotaStream&) = delete;
  QuotaStream& operator=(const QuotaStream&) = delete;

  using Done = std::function<void(Result<std::vector<QuotaAssignment>>)>;
  // One report: `domain` is the report's (empty after the first). Errors (kInvalidArgument, the
  // stream should end): no domain in the first report, another domain later, no bucket, more
  // than kMaxQuotaBuckets, a bucket without pairs or with an empty key or value, a negative
  // time_elapsed. The same bucket twice in one report is one bucket (counts summed), answered
  // once. `done` runs once, possibly on another thread.
  void report(std::string_view domain, std::vector<QuotaUsage> usages, Done done);

  const std::string& domain() const { return domain_; }

 private:
  // One charge of the bucket in force, kept as a reservation until it is settled.
  struct Charge {
    std::string id;
    std::int64_t estimate = 0;  // what was charged: `size` + the refill over [from, until]
    std::int64_t size = 0;
    Micros from = 0;
    Micros until = 0;
  };
  struct Bucket {
    std::uint32_t tokens = 0;      // tokens_per_fill in force (0: none)
    std::uint32_t max_tokens = 0;  // and its max_tokens
    Micros fill_interval = 0;      // whole seconds
    Micros charged_until = 0;      // the refill was charged up to here (the expiry + kQuotaGrace)
    Micros refill_start = 0;       // from here (when the bucket in force began)
    std::int64_t refill_charged = 0;  // its refill charged so far: rounded up once, not per report
    Micros last_report = -1;  // when this bucket was last reported (server clock; -1: never)
    Micros idle_since = -1;   // the start of the reports without requests in a row (-1: none)
    int idle_reports = 0;
    DemandWindow demand;       // the Envoy's demand (quota_demand.h)
    std::string path;          // the metrics label (the rules' stat path)
    bool member = false;       // in QuotaShares
    std::vector<Charge> open;  // the charges of the bucket in force, oldest first
    std::int64_t used = 0;     // requests its reports allowed since it began
    std::int64_t settled = 0;  // what its settled charges kept (their actual cost)
  };
  struct Report;
  void next(std::shared_ptr<Report> report);
  // Assigns a token bucket to the limited bucket at report->index (stages: quota_engine.cc).
  // Publishes the demand, learns the others' (QuotaShares), then limited().
  void share(std::shared_ptr<Report> report, const Limit& limit, std::string key, Micros ttl,
             Micros fill, std::int64_t demand);
  void limited(std::shared_ptr<Report> report, const Limit& limit, std::string key, Micros ttl,
               Micros fill, std::uint32_t want, int stage, std::int64_t left);
  void deny(std::shared_ptr<Report> report, const std::string& key, Micros ttl);
  // The bucket in force ends (replaced, denied, abandoned): every open charge is settled at what
  // the reports used, in order, the rest given back.
  void close(Bucket& bucket);
  // The bucket in force goes on: what it produced past what it used and can hold comes back.
  void give_back_lost(Bucket& bucket, Micros now);
  void settle(const std::string& path, const Charge& charge, std::int64_t actual);
  void leave(const std::string& key, Bucket& bucket);

  const QuotaService& service_;
  std::string id_;  // this stream's member id in QuotaShares (random)
  std::string domain_;
  std::map<std::string, Bucket> buckets_;  // by shared key
  Micros interval_ = 0;  // the longest time seen between two reports of one bucket (0: none yet)
};

}  // namespace spillway::rls
