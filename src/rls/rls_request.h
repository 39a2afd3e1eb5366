// Envoy's ShouldRateLimit request and response as plain values (envoy.service.ratelimit.v3,
// without protobuf): what the gRPC listener converts to and from, and what RlsEngine decides on.
// Units: durations in µs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spillway/duration.h"
#include "src/rls/rls_config.h"

namespace spillway::rls {

struct RlsEntry {
  std::string key;
  std::string value;
  friend bool operator==(const RlsEntry&, const RlsEntry&) = default;
};

// RateLimitDescriptor.RateLimitOverride: a limit the caller gives instead of the configured one.
struct LimitOverride {
  std::uint32_t requests_per_unit = 0;
  Unit unit = Unit::kUnknown;
};

struct RlsDescriptor {
  std::vector<RlsEntry> entries;
  std::optional<LimitOverride> limit;
  std::optional<std::uint64_t> hits_addend;  // wins over the request's; 0 = check, count nothing
};

struct RlsRequest {
  std::string domain;
  std::vector<RlsDescriptor> descriptors;
  std::uint32_t hits_addend = 0;  // 0 (unset) means 1
};

enum class Code : int { kUnknown = 0, kOk = 1, kOverLimit = 2 };

struct CurrentLimit {
  std::string name;
  std::uint32_t requests_per_unit = 0;
  Unit unit = Unit::kUnknown;
  friend bool operator==(const CurrentLimit&, const CurrentLimit&) = default;
};

struct DescriptorStatus {
  Code code = Code::kOk;
  std::optional<CurrentLimit> current_limit;  // none: no rule applies (or unlimited)
  std::uint32_t limit_remaining = 0;
  Micros duration_until_reset = 0;
  friend bool operator==(const DescriptorStatus&, const DescriptorStatus&) = default;
};

struct RlsResponse {
  Code overall_code = Code::kOk;
  std::vector<DescriptorStatus> statuses;  // one per request descriptor, in order
  std::vector<std::pair<std::string, std::string>> response_headers;
};

}  // namespace spillway::rls
