#include "src/grpc/quota_grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>
#include <vector>

namespace spillway::grpc_server {
namespace {

namespace pbq = ::envoy::service::rate_limit_quota::v3;
using Reports = pbq::RateLimitQuotaUsageReports;
using Response = pbq::RateLimitQuotaResponse;

constexpr Micros kMaxDurationMicros = kMaxNow;  // far beyond any report interval

// A Duration in µs, a part of a µs rounded up (so 500 ns is 1 µs, not 0); -1 for one that can
// never be valid (negative, or nanos outside 0..999,999,999). Unset is 0.
Micros micros_of(const ::google::protobuf::Duration& d) {
  if (d.seconds() < 0 || d.nanos() < 0 || d.nanos() > 999'999'999) return -1;
  if (d.seconds() >= kMaxDurationMicros / 1'000'000) return kMaxDurationMicros;
  return d.seconds() * 1'000'000 + (d.nanos() + 999) / 1'000;
}

// Envoy reads only a Duration's `.seconds()` (rate_limit_quota/global_client_impl.cc): whole
// seconds, nanos 0 (the engine gives whole seconds; a remainder is rounded up, never dropped).
void set_duration(::google::protobuf::Duration& d, Micros micros) {
  d.set_seconds((micros + 999'999) / 1'000'000);
  d.set_nanos(0);
}

std::vector<rls::QuotaUsage> usages_of(const Reports& reports) {
  std::vector<rls::QuotaUsage> usages;
  usages.reserve(static_cast<std::size_t>(reports.bucket_quota_usages_size()));
  for (const auto& u : reports.bucket_quota_usages()) {
    rls::QuotaUsage usage;
    for (const auto& [key, value] : u.bucket_id().bucket()) usage.bucket.push_back({key, value});
    usage.elapsed = micros_of(u.time_elapsed());
    usage.allowed = u.num_requests_allowed();
    usage.denied = u.num_requests_denied();
    usages.push_back(std::move(usage));
  }
  return usages;
}

void to_proto(const std::vector<rls::QuotaAssignment>& assignments, Response& response) {
  response.Clear();
  for (const rls::QuotaAssignment& a : assignments) {
    pbq::RateLimitQuotaResponse::BucketAction* action = response.add_bucket_action();
    for (const rls::RlsEntry& entry : a.bucket) {
      (*action->mutable_bucket_id()->mutable_bucket())[entry.key] = entry.value;
    }
    if (a.strategy == rls::QuotaStrategy::kAbandon) {
      action->mutable_abandon_action();  // Envoy forgets the bucket (global_client_impl.cc)
      continue;
    }
    auto* assignment = action->mutable_quota_assignment_action();
    set_duration(*assignment->mutable_assignment_time_to_live(), a.ttl);
    auto* strategy = assignment->mutable_rate_limit_strategy();
    switch (a.strategy) {
      case rls::QuotaStrategy::kAllowAll:
        strategy->set_blanket_rule(::envoy::type::v3::RateLimitStrategy::ALLOW_ALL);
        break;
      case rls::QuotaStrategy::kDenyAll:
        strategy->set_blanket_rule(::envoy::type::v3::RateLimitStrategy::DENY_ALL);
        break;
      case rls::QuotaStrategy::kAbandon:
        break;
      case rls::QuotaStrategy::kTokenBucket: {
        auto* bucket = strategy->mutable_token_bucket();
        bucket->set_max_tokens(a.max_tokens);
        bucket->mutable_tokens_per_fill()->set_value(a.tokens_per_fill);
        set_duration(*bucket->mutable_fill_interval(), a.fill_interval);
        break;
      }
    }
  }
}

// One stream: read a report, answer it, read the next.
class QuotaReactor final : public ::grpc::ServerBidiReactor<Reports, Response> {
 public:
  explicit QuotaReactor(const rls::QuotaService& service) : stream_(service) {
    StartRead(&report_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Finish(::grpc::Status::OK);  // the client closed its side
    stream_.report(report_.domain(), usages_of(report_),
                   [this](Result<std::vector<rls::QuotaAssignment>> answered) {
                     if (!answered) {
                       return Finish(::grpc::Status(::grpc::StatusCode::INVALID_ARGUMENT,
                                                    answered.error().message));
                     }
                     to_proto(*answered, response_);
                     StartWrite(&response_);
                   });
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(::grpc::Status(::grpc::StatusCode::CANCELLED, "the stream ended"));
    StartRead(&report_);
  }
  void OnDone() override { delete this; }

 private:
  rls::QuotaStream stream_;
  Reports report_;
  Response response_;
};

class QuotaGrpcService final : public pbq::RateLimitQuotaService::CallbackService {
 public:
  explicit QuotaGrpcService(const rls::QuotaService& service) : service_(service) {}
  ::grpc::ServerBidiReactor<Reports, Response>* StreamRateLimitQuotas(
      ::grpc::CallbackServerContext* /*context*/) override {
    return new QuotaReactor(service_);
  }

 private:
  const rls::QuotaService& service_;
};

}  // namespace

std::unique_ptr<::grpc::Service> make_quota_grpc_service(const rls::QuotaService& service) {
  return std::make_unique<QuotaGrpcService>(service);
}

}  // namespace spillway::grpc_server
