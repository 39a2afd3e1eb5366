// Envoy's protobuf messages to and from the plain values of src/rls/rls_request.h. Pure
// functions; thread-safe.
#pragma once

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "src/rls/rls_request.h"

namespace spillway::grpc_server {

namespace pb = ::envoy::service::ratelimit::v3;

rls::RlsRequest from_proto(const pb::RateLimitRequest& request);
void to_proto(const rls::RlsResponse& response, pb::RateLimitResponse& out);

}  // namespace spillway::grpc_server
