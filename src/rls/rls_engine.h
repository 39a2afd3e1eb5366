// Deciding Envoy's ShouldRateLimit on any Store (docs/SPEC.md §9), with envoyproxy/ratelimit's
// semantics and spillway's exactness:
//   - each request descriptor finds its rule (rls_match.h), or uses the limit the request gives
//     (an override; it needs a known domain, takes the matched rule's algorithm — fixed_window
//     without one — and, as envoyproxy/ratelimit, is never shadow_mode and has no name);
//   - its cost is its own hits_addend, else the request's, else 1; a cost of 0 checks without
//     counting (a peek);
//   - `replaces` drops the named rules from the same request (an unlimited rule is never
//     dropped); `unlimited` is OK without a counter; requests_per_unit 0 is over the limit
//     without a counter;
//   - all-or-nothing (default): the enforced descriptors are checked in one atomic request, each
//     with its own cost, so a denied request charges none of them; with charge_on_deny each is
//     checked on its own and charged when it admits, as envoyproxy/ratelimit does. A descriptor
//     repeated with the same limit is checked once for the sum of its costs;
//   - once the request is denied, the other descriptors are only peeked to report their state
//     (not at all when the over-limit cache denied it, to make no backend call), and an error
//     of such a peek does not fail the call;
//   - shadow_mode descriptors are charged when the request is admitted (peeked otherwise), and
//     report OK even over their limit. They are checked after the enforced ones, each with its
//     own store call;
//   - an unknown domain, or a descriptor no rule matches, is OK without a limit.
// A backend error fails the whole call with that error (the gRPC layer maps it to a status), a
// shadow rule's included (its count would be missing). The calls to the store are made by the
// one executor (src/policy/plan.h): this engine resolves descriptors into a plan (each one's
// role: enforced, shadow, charged after the response, blocked) and renders the outcome; the
// headers describe the descriptor the executor's top-decision rule chose.
//
// Thread safety: should_rate_limit() from any thread; set_rules() swaps the rules atomically
// (calls already running finish on the rules they started with). Ownership: uses `store`, which
// must outlive the engine.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "spillway/clock.h"
#include "spillway/store.h"
#include "src/config/config.h"
#include "src/policy/plan.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_request.h"
#include "src/rls/rls_stats.h"
#include "src/rls/tenant_gate.h"

namespace spillway::rls {

// Which rate limit headers to add to response_headers_to_add (from the descriptor that decided:
// policy::top_item): none, "RateLimit-Limit/-Remaining/-Reset", or "X-RateLimit-…". The config's
// rls.response_headers enum itself (src/config/config.h), under the engine's name.
using ResponseHeaders = policy::RlsHeaders;

struct RlsOptions {
  bool charge_on_deny = false;
  ResponseHeaders response_headers = ResponseHeaders::kOff;
  // For duration_until_reset of rules without a counter (requests_per_unit 0). Default: system.
  std::shared_ptr<const Clock> clock;
  // Tenant records (rls.tenant_key): a request with a descriptor naming a blocked caller is
  // OVER_LIMIT (those descriptors OVER_LIMIT without a limit, the others OK unchecked), and
  // nothing is charged or asked of the store. Default: no records read.
  TenantGate tenants;
};

// The most descriptors one request may carry and the most entries one descriptor may have
// (bad input beyond: kInvalidArgument, nothing checked).
inline constexpr std::size_t kMaxDescriptors = 64;
inline constexpr std::size_t kMaxEntries = 32;

class RlsEngine {
 public:
  RlsEngine(Store& store, std::shared_ptr<const RlsRules> rules, RlsOptions options = {});

  using Done = std::function<void(Result<RlsResponse>)>;
  // `done` runs exactly once, possibly on another thread, possibly before this returns.
  void should_rate_limit(const RlsRequest& request, Done done);

  void set_rules(std::shared_ptr<const RlsRules> rules);
  std::shared_ptr<const RlsRules> rules() const;
  const RlsOptions& options() const { return options_; }
  Store& store() const { return store_; }
  RlsStats& stats() { return stats_; }

 private:
  struct Call;
  // Renders the executor's outcome (src/policy/plan.h) as the call's answer.
  void finish(const std::shared_ptr<Call>& call, Result<policy::Outcome> outcome);

  Store& store_;
  RlsOptions options_;
  mutable std::mutex rules_mutex_;
  std::shared_ptr<const RlsRules> rules_;
  RlsStats stats_;
};

}  // namespace spillway::rls
