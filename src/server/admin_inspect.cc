// The admin API's inspection (src/server/admin_service.h): GET /v1/inspect?NAME=VALUE&…, the
// attributes percent-decoded and checked (each an attribute the policy reads, once, at most
// kMaxKeyBytes; "ip" spelt as requests key it), resolved by the policy in force, each layer's
// state read from the serving store with cost 0 (src/server/inspection.h). Changes nothing;
// never audited, never logged with its query.
// Thread safety: from any thread; it waits for the store on the admin listener's own thread.
#include <algorithm>
#include <string>
#include <string_view>

#include "spillway/forwarding_store.h"
#include "src/core/text.h"
#include "src/policy/caller_value.h"
#include "src/server/admin_records.h"
#include "src/server/admin_service.h"
#include "src/server/decision_response.h"
#include "src/server/inspection.h"

namespace spillway::server {

HttpResponse AdminService::inspect(std::string_view query) const {
  const std::shared_ptr<const policy::Policy> policy = policy_();
  const std::vector<std::string>& used = policy->attributes_used();
  if (query.empty()) {
    return error_response(400,
                          "give the request's attributes as query parameters, e.g. "
                          "/v1/inspect?api_key=...&ip=203.0.113.7&endpoint=/search");
  }
  policy::Attributes attributes;
  for (std::size_t number = 1;; ++number) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.empty()) {
      return error_response(400,
                            "an empty parameter ('&' at an end or twice in a row): each "
                            "parameter is NAME=VALUE");
    }
    const std::size_t equals = pair.find('=');
    // A value may be a caller's key: these messages never quote it (the attribute checks below
    // quote at most 80 characters of a malformed address, as the decision endpoints do).
    if (equals == std::string_view::npos) {
      return error_response(
          400, "parameter " + std::to_string(number) + " has no '=': each parameter is NAME=VALUE");
    }
    const auto name = percent_decoded(pair.substr(0, equals));
    if (!name) return error_response(400, "a parameter's name has a malformed %-escape");
    if (name->empty()) {
      return error_response(400, "a parameter has an empty name (=VALUE): each is NAME=VALUE");
    }
    if (!std::binary_search(used.begin(), used.end(), *name)) {
      std::string known;
      for (const std::string& attribute : used) known += (known.empty() ? "" : ", ") + attribute;
      return error_response(
          400, "unknown attribute " + quote_for_error(*name, 64) + ": the policy uses " + known);
    }
    auto value = percent_decoded(pair.substr(equals + 1));
    if (!value) {
      return error_response(400,
                            "attribute " + quote_for_error(*name) + " has a malformed %-escape");
    }
    if (value->size() > kMaxKeyBytes) {
      return error_response(400, "attribute " + quote_for_error(*name) + " is " +
                                     std::to_string(value->size()) + " bytes, over the " +
                                     std::to_string(kMaxKeyBytes) + "-byte bound");
    }
    if (*name == policy::kIpAttribute) {
      // As the decision endpoints key it; the key form ("10.0.0.1/32") is taken too.
      auto ip = policy::ip_attribute_key(*value, ipv6_prefix_(), true);
      if (!ip) return error_response(400, ip.error().message);
      value = std::move(*ip);
    }
    if (!attributes.emplace(*name, std::move(*value)).second) {
      return error_response(400, "attribute " + quote_for_error(*name) + " is given twice");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  auto checks = policy->resolve(attributes);
  if (!checks) {
    if (checks.error().code == Errc::kInvalidArgument) {
      return error_response(400, checks.error().message);
    }
    return error_response(503, checks.error().message);
  }
  Inspection inspection{.backend = inspect_backend_.url,
                        .key_names = inspect_backend_.key_names,
                        .plans_from_config = false,
                        // The backend's own state: a cache, a local fallback or a lease would
                        // answer for it, and count the read in their metrics.
                        .layers = inspect_layers(*policy, *checks, &innermost_store(store_),
                                                 inspect_backend_.stored_name)};
  return json_response(200, inspection_json(inspection));
}

}  // namespace spillway::server
