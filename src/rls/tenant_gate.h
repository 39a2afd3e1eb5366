// Tenant records on Envoy's paths (docs/SPEC.md §9.8): with `rls.tenant_key` set, a descriptor
// entry (ShouldRateLimit) or a bucket pair (RLQS) whose key is that name carries a caller, spelt
// as the policy's records are (Policy::tenant_key: an address as its key, a path as its canonical
// path); a caller whose record is blocked is over the limit there as on /v1/check and /v1/auth,
// and nothing is charged. Plans and custom rates of a record do not apply there: the rules file
// gives those paths their limits.
//
// Thread safety: blocked() from any thread (the directory's find() is). Ownership: shares the
// directory; `spell` must be callable for as long as the gate is.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "spillway/error.h"
#include "spillway/tenant_directory.h"
#include "src/rls/rls_request.h"

namespace spillway::rls {

struct TenantGate {
  std::shared_ptr<const TenantDirectory> tenants;  // null: no records read
  std::string descriptor_key;                      // "": no entry carries a caller
  // A value as its record's key (the policy in force); null: the value itself. An error: the
  // value can name no caller (then it is not blocked).
  std::function<Result<std::string>(std::string_view)> spell;

  bool active() const { return tenants != nullptr && !descriptor_key.empty(); }
  // Whether an entry of `entries` names a caller whose record is blocked. No I/O.
  bool blocked(std::span<const RlsEntry> entries) const;
};

}  // namespace spillway::rls
