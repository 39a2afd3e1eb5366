// Envoy's Rate Limit Quota Service on the gRPC listener (docs/SPEC.md §9.7):
// envoy.service.rate_limit_quota.v3.RateLimitQuotaService, StreamRateLimitQuotas. Each stream
// reads a report, answers it with one RateLimitQuotaResponse (an action per reported bucket,
// from rls::QuotaStream), then reads the next. A bad report ends the stream with
// INVALID_ARGUMENT naming what was wrong; the client closing its side ends it with OK.
//
// Thread safety: gRPC's threads call it; each stream is one reactor, used in sequence.
// Ownership: uses `service`, which outlives the listener.
#pragma once

#include <memory>

#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include "src/rls/quota_engine.h"

namespace spillway::grpc_server {

std::unique_ptr<::grpc::Service> make_quota_grpc_service(const rls::QuotaService& service);

}  // namespace spillway::grpc_server
