// A built policy and its decision for one request.
//
// Policy::make validates a PolicySpec and builds every Limit once; a Policy is immutable and safe
// to share between threads (reload = make a new one and swap the shared_ptr).
// decide() resolves the request's layers, runs them all-or-nothing through a Store, and combines
// the answers (docs/SPEC.md §5): the top-level decision is the denying layer with the longest wait,
// or, when admitted, the layer with the fewest remaining.
// Shadow layers (LayerMode::kShadow) never take part in that: once the enforced layers admitted a
// request, each shadow layer that applies is checked on its own (charged when it admits, as if
// it alone were added to the enforced ones), and the ones that would deny are named in
// shadow_denied. A denied request does not check them. A shadow layer whose attributes are
// missing does not apply; a backend error of a shadow check changes nothing in the answer but
// shadow_error (the layer is left out of `layers`).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/policy_spec.h"
#include "spillway/store.h"
#include "spillway/tenant_directory.h"

namespace spillway::policy {

class RouteTable;  // src/policy/routes.h

struct LayerDecision {
  std::string name;
  Decision decision;
  Micros period = 0;    // of the limit applied, for the RateLimit-Policy header
  bool shadow = false;  // a shadow layer: reported, never denies
  std::string plan;     // a by_plan layer: the plan applied ("pro"); empty for other layers
  bool hold = false;    // a concurrency layer (its period is the hold's lifetime)
};

struct PolicyDecision {
  bool allowed = true;
  std::optional<std::string> denied_by;  // layer name
  // Denied by a layer that kept part of its capacity from the request's priority (load shedding,
  // docs/SPEC.md §2.4): answered apart from a plain limit. `priority`: the request's level
  // (empty when the policy has no priorities).
  bool shed = false;
  std::string priority;
  std::string denied_key;  // the denying layer's key (empty when admitted)
  Decision top;            // what the top-level fields and headers describe
  Micros top_period = 0;
  std::int64_t top_capacity =
      0;  // its limit's capacity() (0 when no layer applied): X-RateLimit-Limit
  // Admitted by a layer with a max_delay after a wait (shaping, docs/SPEC.md §2.2): how long the
  // caller waits before it proceeds, µs: the longest of its enforced layers' delays (every layer
  // was charged now). 0 otherwise.
  Micros delay = 0;
  std::vector<LayerDecision> layers;       // the layers that applied: enforced, then shadow ones
  bool shadow_checked = false;             // shadow layers applied and were checked
  std::vector<std::string> shadow_denied;  // shadow layers that would have denied
  std::optional<Error> shadow_error;       // the first error of a shadow layer's check
  // Policy::reserve, admitted: the reservation's id (Store::settle settles it); else empty.
  // Also, from decide as well, the ticket of the slots its concurrency layers hold
  // (docs/SPEC.md §2.5): any settlement of it releases them (spillway/ticket.h).
  std::string reservation;
  // Admitted holding concurrency slots: µs until the first of its holds expires unless released
  // (the shortest hold_ttl of those layers). 0: it holds none.
  Micros hold_expires = 0;
  // Admitted as a reservation: how long its record lives unsettled (the ttl asked for, or the
  // longest hold_ttl when that is longer).
  std::chrono::milliseconds reservation_ttl{0};
};

// The field of the error a request gets from decide_async with holds_allowed false when a
// concurrency layer applies to it: the set-up is wrong (the front end cannot release), not the
// request.
inline constexpr char kHoldsRefused[] = "algorithm: concurrency";

// The plan name a layer answer carries when a tenant record gave the caller its own rate.
inline constexpr char kCustomPlan[] = "custom";

// The field of the error a request gets from a `source: store` layer while the tenant records
// were never loaded and until_loaded is kDeny (Policy::make): a denial, not a backend failure
// that on_error may turn into an admission.
inline constexpr char kTenantsNotLoaded[] = "tenants.until_loaded";

class Policy {
 public:
  // `tenants`: where by_plan layers with `source: store` look callers up (shared with the server
  // that writes them); without one, such layers use their file assignments and default only.
  // `until_loaded`: what those layers decide while `tenants` is not ready() (never loaded):
  // kDeny, an enforced one fails the request with an error whose field is kTenantsNotLoaded
  // (kUnavailable; a server answers it as a denial, never by on_error); kDefaults, as without
  // records.
  static Result<std::shared_ptr<const Policy>> make(
      PolicySpec spec, std::shared_ptr<const TenantDirectory> tenants = nullptr,
      UntilLoaded until_loaded = UntilLoaded::kDeny);

  // The checks a request makes: one per layer that applies (an endpoint layer whose endpoint is
  // not listed does not apply). Errors name the missing or empty attribute and its layer, or a
  // cost attribute that is not a whole number 0..2^52.
  struct Check {
    std::size_t layer;
    std::string key;  // "<layer>:<len>:<value>[:<len>:<value>...]": no two requests collide
    const Limit* limit;
    const std::string* plan = nullptr;  // a by_plan layer: its plan's name (owned by spec())
    // A tenant record's own rate for this layer; `limit` points into it.
    std::shared_ptr<const Limit> custom;
    // A tenant record blocks this caller: the request is denied by this layer, nothing charged.
    bool blocked = false;
    // What this layer is charged: its cost attribute's value, or kRequestCost (the request's).
    std::int64_t cost = kRequestCost;
    // The layer's lease (spec()'s), when it is decided from quota leases.
    const LeaseSpec* lease = nullptr;
    // The request's priority level (spec()'s), null when the policy has no priorities. `limit`
    // is that level's view of the layer's limit: it keeps limit->reserved() from the request.
    const std::string* priority = nullptr;
    std::shared_ptr<const Limit> view;  // owns that view when it keeps something
  };
  Result<std::vector<Check>> resolve(const Attributes& attributes) const;
  // The index of the request's priority level in spec().priority->levels (the policy has
  // priorities): its attribute's value, the default when absent; an unknown value is an error.
  Result<std::size_t> priority_level(const Attributes& attributes) const;

  // Resolves, checks all-or-nothing, and combines; the answer goes to `done` as the store's does
  // (Store::decide). A request that a concurrency layer applies to (cost above 0) is made a
  // reservation living as long as its longest hold_ttl: admitted, its `reservation` is the ticket
  // to release (the store must keep reservations, as for reserve). Errors: bad attributes
  // (kInvalidArgument) or the store's error. The caller keeps this Policy and the store alive until
  // `done` ran.
  // `holds_allowed` false: a front end with no release step (nginx's auth_request); a request
  // that a concurrency layer applies to is an error instead (kInvalidArgument, field
  // kHoldsRefused), before anything is charged.
  void decide_async(Store& store, const Attributes& attributes, std::int64_t cost,
                    std::optional<Micros> now, std::function<void(Result<PolicyDecision>)> done,
                    bool holds_allowed = true) const;
  // decide_async, waiting for its answer (src/core/wait_for_answer.h).
  Result<PolicyDecision> decide(Store& store, const Attributes& attributes, std::int64_t cost,
                                std::optional<Micros> now = std::nullopt) const;

  // Usage-based limits (docs/SPEC.md §5.3): decide_async, charging each enforced layer its
  // estimate (its cost attribute, or `cost`) as a reservation that lives `ttl`. When admitted,
  // the answer's `reservation` names it; settle it with Store::settle (a commit with the actual
  // costs, or a cancel), by layer name. Shadow layers are checked as by decide_async and keep
  // their charge. The store must keep reservations (kInvalidArgument otherwise).
  void reserve_async(Store& store, const Attributes& attributes, std::int64_t cost,
                     std::optional<Micros> now, std::chrono::milliseconds ttl,
                     std::function<void(Result<PolicyDecision>)> done) const;
  Result<PolicyDecision> reserve(Store& store, const Attributes& attributes, std::int64_t cost,
                                 std::chrono::milliseconds ttl,
                                 std::optional<Micros> now = std::nullopt) const;

  // Every (key, limit) that layer `layer` may keep for the caller whose value of the layer's one
  // caller attribute (its key's attribute other than the route) is `value`: a by_plan layer, one
  // per plan and the tenant's own rate if it has one; a by_endpoint layer, one per route; a fixed
  // limit, one. What the admin API resets. Errors (kInvalidArgument): no such layer; a layer keyed
  // by more than one such attribute, or by a path it has no routes for (its keys cannot all be
  // named from `value`).
  // `value` may be any spelling of the caller: it is made the one resolve() keys by first
  // (caller_value(); `ipv6_prefix` is server.ipv6_prefix).
  Result<std::vector<Check>> keys_of_caller(std::string_view layer, std::string_view value,
                                            int ipv6_prefix = 64) const;

  // The spelling of `value` that resolve() puts in a key for attribute `attribute`
  // (src/policy/caller_value.h): "ip" an address (or its key form) made its key, a path attribute
  // its canonical path, any other attribute `value` itself. Errors (kInvalidArgument, the
  // attribute as field) name the form expected: nothing a request sends could be keyed so.
  Result<std::string> caller_value(std::string_view attribute, std::string_view value,
                                   int ipv6_prefix) const;
  // The key a tenant record is stored under for the caller spelt `value`: caller_value() for the
  // attribute of each by_plan layer with `source: store`. Errors (kInvalidArgument): no such
  // layer could ever look `value` up (naming each layer's form), or two such layers, keyed by
  // different attributes, spell it differently (one record cannot serve both).
  Result<std::string> tenant_key(std::string_view value, int ipv6_prefix) const;

  // Every attribute some layer reads (key parts, plan and endpoint attributes, "method" when a
  // route names one), sorted: what POST /v1/check accepts.
  const std::vector<std::string>& attributes_used() const { return attributes_used_; }
  // The path attributes that an enforced endpoint layer matches routes on ("endpoint" for the
  // usual policy): a request without one skips those limits, so HTTP front ends require it.
  const std::vector<std::string>& route_attributes() const { return route_attributes_; }
  // The attributes that layers take their cost from (`cost:`), sorted: a JSON body may give them
  // as numbers.
  const std::vector<std::string>& cost_attributes() const { return cost_attributes_; }

  // Some layer is a concurrency limit (algorithm: concurrency): its requests hold slots that
  // only a release frees, so front ends with no release step refuse them (/v1/auth).
  bool has_concurrency() const { return has_concurrency_; }

  const PolicySpec& spec() const { return spec_; }
  const std::shared_ptr<const TenantDirectory>& tenants() const { return tenants_; }
  const std::string& layer_name(std::size_t layer) const { return spec_.layers[layer].name; }

 private:
  struct BuiltLayer {
    std::optional<Limit> fixed;
    std::map<std::string, Limit, std::less<>> by_plan;  // plan name -> limit
    std::shared_ptr<const RouteTable> routes;  // by_endpoint: route i limited by route_limits[i]
    std::vector<Limit> route_limits;
    std::vector<std::string> route_names;  // route i as written: its part of the layer's key
    // Per priority level (PrioritySpec::levels' order): the permille of the capacity kept from
    // it by the levels above (0 for the highest). Empty: the layer keeps nothing.
    std::vector<std::int64_t> kept_permille;
    // With kept_permille: per limit above (by address), its view for each level.
    std::map<const Limit*, std::vector<Limit>> views;
  };
  explicit Policy(PolicySpec spec, std::shared_ptr<const TenantDirectory> tenants)
      : spec_(std::move(spec)), tenants_(std::move(tenants)) {}
  bool is_path_attribute(std::string_view name) const;
  Result<std::optional<std::size_t>> match_route(const LayerSpec& layer, const BuiltLayer& built,
                                                 const Attributes& attributes) const;
  // decide_async and reserve_async: one path; `ttl` set means a reservation.
  void run_async(Store& store, const Attributes& attributes, std::int64_t cost,
                 std::optional<Micros> now, std::optional<std::chrono::milliseconds> ttl,
                 std::function<void(Result<PolicyDecision>)> done, bool holds_allowed) const;

  PolicySpec spec_;
  std::shared_ptr<const TenantDirectory> tenants_;
  UntilLoaded until_loaded_ = UntilLoaded::kDeny;
  std::vector<BuiltLayer> built_;
  std::vector<std::string> attributes_used_;
  std::vector<std::string> route_attributes_;
  std::vector<std::string> cost_attributes_;
  bool has_concurrency_ = false;
};

// What a layer keeps from a priority level that is kept `permille` of a limit's `capacity`: the
// capacity less what that level may fill, floor(capacity x (1000 - permille) / 1000).
std::int64_t kept_units(std::int64_t capacity, std::int64_t permille);

// What a concurrency layer (LayerSpec::hold_ttl) may not have, naming the field: a by_plan or
// by_endpoint selector, shadow mode, a lease, a cost attribute, a max_delay. nullopt for a rate
// layer or a sound concurrency layer.
std::optional<Error> concurrency_layer_problem(const LayerSpec& layer);

// A layer's `reserve` as the permille kept from each level of `priority`: the shares of the levels
// above it, added up. Errors (kInvalidArgument) name the layer: no priority levels, a leased
// layer, a level unknown or the lowest, a share out of 0.1 %..100 %, shares past 100 %.
Result<std::vector<std::int64_t>> kept_by_level(const LayerSpec& layer,
                                                const std::optional<PrioritySpec>& priority);

// `limit` as each priority level sees it (level i keeps kept_units(capacity, kept_permille[i])).
// Refused, naming the layer and level, when a share under 100 % leaves a level nothing.
Result<std::vector<Limit>> level_views(const Limit& limit, const LayerSpec& layer,
                                       const PrioritySpec& priority,
                                       const std::vector<std::int64_t>& kept_permille);

}  // namespace spillway::policy
