// PolicySpec: a layered policy as written (in a config file or by an embedding program), before
// Policy::make (spillway/policy_engine.h) validates it and builds its limits.
//
// Layered policies (docs/SPEC.md §4-§5): an ordered list of layers, each keyed by some request
// attributes, each with one algorithm and a limit that is fixed, chosen by plan (API key -> plan),
// or chosen by endpoint (other endpoints pass that layer). A request is admitted only if every
// layer admits it, and a denied request charges no layer (all-or-nothing).
//
// Immutable once built; safe to share between threads. Reload = build a new Policy and swap it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spillway/error.h"
#include "spillway/lease.h"
#include "spillway/limit.h"

namespace spillway::policy {

// A request's attributes as strings: "ip", "api_key", "endpoint", or any other name.
using Attributes = std::map<std::string, std::string, std::less<>>;

// One limit as written in a policy: "60/min" plus an optional burst (bucket algorithms only).
struct RateSpec {
  std::int64_t limit = 0;
  Micros period = 0;
  std::optional<std::int64_t> burst;
  friend bool operator==(const RateSpec&, const RateSpec&) = default;
};

// Where a by_plan layer finds a caller's plan: the `assignments` below only (kFile), or first the
// tenant records the server holds (kStore: `source: store`, spillway/tenant_directory.h: a plan,
// a custom rate for this layer, or blocked), then `assignments`, then the default.
enum class PlanSource { kFile, kStore };

// What a `source: store` layer decides while the tenant directory has not been loaded yet (a
// fresh instance whose backend does not answer; config `tenants.until_loaded`, docs/SPEC.md
// §5.2): kDeny, the request is refused as the backend's failure is with on_error deny (503,
// 403 to nginx), whatever on_error says, so that a caller an operator blocked is not admitted;
// kDefaults, the layer uses the file's `keys:` and default plan, as if no record existed (a
// blocked caller is admitted at its file plan).
enum class UntilLoaded { kDeny, kDefaults };

struct PlanSelector {
  std::string attribute = "api_key";               // whose value picks the plan
  std::map<std::string, RateSpec> plans;           // plan name -> limit ("free" -> 60/min)
  std::string default_plan;                        // for values not in `assignments`
  std::map<std::string, std::string> assignments;  // attribute value (API key) -> plan name
  PlanSource source = PlanSource::kFile;
  friend bool operator==(const PlanSelector&, const PlanSelector&) = default;
};

// Routes (docs/SPEC.md §5.1): "/search", "POST /search", "/orders/{id}/export", "/files/**".
// The request's path is made canonical first (query dropped, escapes, dot segments and repeated
// or trailing slashes normalised); the most specific route wins; the layer's key holds the route
// as written, so "/orders/1/export" and "/orders/2/export" share one budget. Routes that name a
// method need the "method" attribute.
struct EndpointSelector {
  std::string attribute = "endpoint";      // the request path (raw or canonical: both work)
  std::map<std::string, RateSpec> limits;  // route -> limit ("/search" -> 10/min); other paths
                                           // pass this layer
  bool case_sensitive = false;             // true: "/Search" and "/search" are two paths
  friend bool operator==(const EndpointSelector&, const EndpointSelector&) = default;
};

// The attribute that carries the request's method for routes that name one.
inline constexpr char kMethodAttribute[] = "method";
// The attribute that carries the request's path. Any layer that keys by it keys by its canonical
// form (docs/SPEC.md §5.1), so spellings of one path share a key.
inline constexpr char kEndpointAttribute[] = "endpoint";

// kShadow: the layer is checked and its would-be denials counted, but it never denies (the way
// to roll out a new limit safely). It is checked on its own once the enforced layers admitted
// the request, and charged when it admits: its state is what enforcing it alone would leave.
enum class LayerMode { kEnforce, kShadow };

struct LayerSpec {
  std::string name;              // "edge", "gateway", "endpoint"; unique in a policy
  std::vector<std::string> key;  // attribute names forming the key, in order (e.g. {"ip"})
  Algorithm algorithm = Algorithm::kGcra;
  LayerMode mode = LayerMode::kEnforce;
  // The attribute whose value is this layer's cost (`cost: tokens`: a whole number 0..2^52, e.g.
  // the tokens a request will use), so that one request charges each layer what it counts
  // (requests here, tokens there), all-or-nothing as ever. Empty: the request's cost.
  std::string cost;
  // `sync: lease`: this layer's limit may be decided in the process from quota leases
  // (spillway/lease.h; a Redis backend wrapped in a LeaseStore), within the bound of
  // docs/SPEC.md §2.3. nullopt (`sync: exact`): every check asks the shared store.
  std::optional<LeaseSpec> lease;
  // `max_delay: 500ms` (gcra and token_bucket only, exact sync only): a request this layer would
  // deny now but admits after a wait of at most this long is admitted and charged now, and the
  // answer carries the wait (Limit::with_max_delay, docs/SPEC.md §2.2). 0: no delay.
  Micros max_delay = 0;
  // `reserve: {critical: 20%}`: a share of this layer's capacity kept for requests of a priority
  // (PolicySpec::priority), in permille, per level: requests below that level admit only into what
  // the shares of the levels above theirs leave (Limit::with_reserved, docs/SPEC.md §2.4). Every
  // level named is a level of the policy's priorities; the shares add up to at most 1000. Empty:
  // every priority uses the whole limit.
  std::map<std::string, std::int64_t> reserve;
  // `algorithm: concurrency`: a concurrency layer (Limit::concurrency): `limit` holds N, the most
  // requests in flight per key, and its period is this lifetime of a hold (µs; `hold_ttl`,
  // 60 s unless given). `algorithm` is then kSlidingLog, the state such a limit keeps. A request
  // it admits holds a slot until released (docs/SPEC.md §2.5). Only with a fixed `limit`, enforced,
  // exact, and without a cost attribute or a max_delay. nullopt: a rate layer.
  std::optional<Micros> hold_ttl;
  bool is_concurrency() const { return hold_ttl.has_value(); }
  // Exactly one of these three is set.
  std::optional<RateSpec> limit;
  std::optional<PlanSelector> by_plan;
  std::optional<EndpointSelector> by_endpoint;
  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

// A request's priority (load shedding, docs/SPEC.md §2.4): the attribute that carries it, its
// levels from the highest down, and the level of a request that does not say (an unknown value is
// an error naming the attribute).
struct PrioritySpec {
  std::string attribute = "priority";
  std::vector<std::string> levels;  // e.g. {"critical", "normal", "sheddable"}
  std::string default_level;        // one of levels
  friend bool operator==(const PrioritySpec&, const PrioritySpec&) = default;
};

struct PolicySpec {
  std::vector<LayerSpec> layers;
  // Needed by any layer's `reserve`; none: requests have no priority.
  std::optional<PrioritySpec> priority;
  friend bool operator==(const PolicySpec&, const PolicySpec&) = default;
};

// The seed article's policy (docs/SPEC.md §4): edge by ip 1000/min; gateway by api_key with plans
// free 60/min (default) and pro 600/min; endpoint by (api_key, endpoint) with /search 10/min and
// /export 5/min. All gcra.
PolicySpec seed_policy_spec();

}  // namespace spillway::policy
