#include "src/grpc/rls_convert.h"

namespace spillway::grpc_server {
namespace {

void set_duration(Micros micros, ::google::protobuf::Duration& out) {
  if (micros < 0) micros = 0;
  out.set_seconds(micros / kMicrosPerSecond);
  out.set_nanos(static_cast<std::int32_t>(micros % kMicrosPerSecond) * 1000);
}

rls::Unit unit_of(int proto_unit) {
  return proto_unit >= 1 && proto_unit <= 7 ? static_cast<rls::Unit>(proto_unit)
                                            : rls::Unit::kUnknown;
}

}  // namespace

rls::RlsRequest from_proto(const pb::RateLimitRequest& request) {
  rls::RlsRequest out;
  out.domain = request.domain();
  out.hits_addend = request.hits_addend();
  out.descriptors.reserve(static_cast<std::size_t>(request.descriptors_size()));
  for (const auto& descriptor : request.descriptors()) {
    rls::RlsDescriptor d;
    d.entries.reserve(static_cast<std::size_t>(descriptor.entries_size()));
    for (const auto& entry : descriptor.entries())
      d.entries.push_back({entry.key(), entry.value()});
    if (descriptor.has_limit()) {
      d.limit = rls::LimitOverride{descriptor.limit().requests_per_unit(),
                                   unit_of(descriptor.limit().unit())};
    }
    if (descriptor.has_hits_addend()) d.hits_addend = descriptor.hits_addend().value();
    out.descriptors.push_back(std::move(d));
  }
  return out;
}

void to_proto(const rls::RlsResponse& response, pb::RateLimitResponse& out) {
  out.set_overall_code(static_cast<pb::RateLimitResponse::Code>(response.overall_code));
  for (const rls::DescriptorStatus& status : response.statuses) {
    pb::RateLimitResponse::DescriptorStatus* s = out.add_statuses();
    s->set_code(static_cast<pb::RateLimitResponse::Code>(status.code));
    if (status.current_limit) {
      pb::RateLimitResponse::RateLimit* limit = s->mutable_current_limit();
      limit->set_name(status.current_limit->name);
      limit->set_requests_per_unit(status.current_limit->requests_per_unit);
      limit->set_unit(static_cast<pb::RateLimitResponse::RateLimit::Unit>(
          static_cast<int>(status.current_limit->unit)));
    }
    s->set_limit_remaining(status.limit_remaining);
    if (status.current_limit)
      set_duration(status.duration_until_reset, *s->mutable_duration_until_reset());
  }
  for (const auto& [name, value] : response.response_headers) {
    auto* header = out.add_response_headers_to_add();
    header->set_key(name);
    header->set_value(value);
  }
}

}  // namespace spillway::grpc_server
