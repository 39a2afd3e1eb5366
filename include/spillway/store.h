// The interface every backend and every wrapper implements. A request (StoreRequest) is N keys,
// each under its own Limit (and, optionally, its own cost); a check decides them all-or-nothing
// in one atomic step (Operation: the other requests, reserve, reset and charge), and
// Store::decide answers one decision per key, in order; a single check is a request of one key.
// Around it: the synchronous and single-key forms callers use, settling reservations, readiness,
// metrics and caches.
//
// Thread safety: every Store is safe to call from many threads at once.
// Keys are arbitrary byte strings of 1..kMaxKeyBytes bytes. The state of a key is separate per
// Limit: the same key checked under two different Limits is two independent limiters.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/lease.h"
#include "spillway/limit.h"

namespace spillway {

inline constexpr std::size_t kMaxKeyBytes = 1024;

// A KeyedLimit's cost when it has none of its own: the request's.
inline constexpr std::int64_t kRequestCost = -1;

// One layer of an all-or-nothing check: a key under a limit, charged the request's cost or its
// own (`cost` >= 0: a layer that counts something else, e.g. tokens where another counts
// requests; still all-or-nothing with the others). `lease` (owned by the caller, like the key):
// this key may be decided from a quota lease (spillway/lease.h) by a LeaseStore; every other
// store decides it exactly and ignores it.
struct KeyedLimit {
  std::string_view key;
  const Limit* limit;
  std::int64_t cost = kRequestCost;
  const LeaseSpec* lease = nullptr;
};

// What `check` is charged in a request whose cost is `request_cost`.
constexpr std::int64_t cost_of(const KeyedLimit& check, std::int64_t request_cost) {
  return check.cost == kRequestCost ? request_cost : check.cost;
}

using Decisions = std::vector<Decision>;

// What a request asks of a store.
//   kCheck  the checks below (all-or-nothing, cost charged when all admit).
//   kReserve a check that, when admitted, keeps its charges as a reservation (reserve(): its
//           id, lifetime and each key's label), to be settled once by settle(). A store that
//           keeps no reservations answers kInvalidArgument.
//   kReset  every key forgets its state under its limit, so that its next check finds it fresh
//           (an operator undoing a limit that was hit by mistake). The cost is not used. Each
//           key's decision says whether there was state to forget (`allowed` true) or not
//           (false); `limit` is its limit. Every wrapper passes it to the backend (a cache of
//           denials forgets what it remembers).
//   kCharge each key is charged its cost without a check: usage reported after the work ran
//           (Envoy's descriptors sent when the stream is done, with the tokens used). A key goes
//           into debt, bounded at one limit past empty as a settlement's is (docs/SPEC.md §2.1),
//           and later checks wait until it is paid off. Nothing is refused, so it is not
//           all-or-nothing; each decision is `allowed` (charged) with the key's state after it
//           (a peek's remaining and reset_after, and its retry_after: the wait until a key in
//           debt admits again, the one allowed decision whose retry_after may be above 0). No
//           cache answers it.
enum class Operation : std::uint8_t { kCheck, kReset, kReserve, kCharge };

// Usage-based limits (docs/SPEC.md §2.1, §5.3): a cost known only after the work (LLM tokens) is
// charged as an estimate by a reservation, then settled with the actual cost.
//
// One key of a reservation: the name of its layer, and whether its cost is a measured quantity
// (a layer with a cost attribute, such as tokens) that a settlement's single `cost` applies to.
// `hold`: a concurrency limit's slot (Limit::concurrency), which every settlement, commit or
// cancel, gives back whole (its actual cost is 0): settling the reservation is the release.
struct ReservedLayer {
  std::string_view label;
  bool metered = false;
  bool hold = false;
};

// What a kReserve request keeps. A view, as StoreRequest's keys are.
struct ReserveSpec {
  std::string_view id;                    // 1..kMaxReservationIdBytes bytes, unguessable
  std::chrono::milliseconds ttl;          // > 0: unsettled by then, it expires, charges kept
  std::span<const ReservedLayer> layers;  // one per key, in the keys' order
};
inline constexpr std::size_t kMaxReservationIdBytes = 64;

// A new reservation id: 128 random bits (getrandom, the operating system's CSPRNG), base64url,
// 22 bytes.
std::string new_reservation_id();

// The actual cost of one layer of a reservation, by its label.
struct LayerCost {
  std::string_view label;
  std::int64_t cost;
};

// What settles a reservation, once. The actual cost of each key is, in order of precedence: 0
// for a hold (ReservedLayer::hold) and when `cancel`; its entry in `costs`; `cost` when the key is
// metered, or when no key of the reservation is; else its estimate (no change). Below the estimate
// the difference is given back (docs/SPEC.md §2.1: never more than had the actual cost been charged
// from the start); above it, the difference is charged without a check (debt).
struct Settlement {
  std::string_view id;
  bool cancel = false;
  std::optional<std::int64_t> cost;
  std::span<const LayerCost> costs;
  std::optional<Micros> now;  // overrides the store's clock, as StoreRequest's does
  // A release (POST /v1/release, spillway::Ticket): the slots come back and every other layer
  // keeps its estimate. Only a reservation that holds a slot (a ticket) is released: any other
  // is kInvalidArgument (field "ticket"), nothing changed. Not with cancel, cost or costs.
  bool release = false;
};

// How one key of a reservation was settled.
struct SettledLayer {
  std::string label;
  std::int64_t estimate = 0;
  std::int64_t actual = 0;
  std::int64_t refunded = 0;  // given back (actual below the estimate; at most the difference)
  std::int64_t charged = 0;   // charged as debt (actual above; less when the debt bound stopped it)
  Decision after;             // the key as it stands after (a peek of cost 0)
  bool hold = false;          // a concurrency slot (ReservedLayer::hold): refunded 1 if given back
};
using Settled = std::vector<SettledLayer>;

// What is wrong with a settlement before any store looks at it (kInvalidArgument, naming the
// field): an empty or too long id, a cost below 0 or above 2^52, a label given twice or empty.
std::optional<Error> settlement_problem(const Settlement& settlement);

// One request to a store, validated once where it enters (make()): every store and wrapper takes
// it as it is. All-or-nothing over its keys (the layers of one request), as one atomic step:
// each key's cost (cost_of(i): its own, else `cost`) is charged to it if every key admits its
// cost, and nothing to any otherwise. The answer has
// one decision per key, in order; when the request is denied, the keys that denied report their
// denial and the others their state as it stands (allowed, remaining uncharged).
// cost 0 is a peek (reports, changes nothing). `now` (µs) overrides the store's clock; for replay
// and tests. A denied request changes no state.
//
// A view: the keys and limits belong to the caller and live until decide() returns; a store that
// answers later copies what it needs (src/open_store/owned_request.h). Plain value, cheap to copy.
class StoreRequest {
 public:
  // Errors (kInvalidArgument, nothing decided): no key, an empty key, a key over kMaxKeyBytes, the
  // same key under the same limit twice, a negative cost (a key's own: other than kRequestCost),
  // `now` outside 0..2^52 µs, Operation::kReserve (make_reserve builds those).
  static Result<StoreRequest> make(std::span<const KeyedLimit> checks, std::int64_t cost = 1,
                                   std::optional<Micros> now = std::nullopt,
                                   Operation operation = Operation::kCheck);

  // What make() would refuse, if anything (the same error); for a form that validates once and
  // then builds no request (MemoryStore's synchronous checks).
  static std::optional<Error> problem(std::span<const KeyedLimit> checks, std::int64_t cost,
                                      std::optional<Micros> now);

  std::span<const KeyedLimit> checks() const { return checks_; }
  std::int64_t cost() const { return cost_; }
  // What key i is charged: its own cost, or the request's.
  std::int64_t cost_of(std::size_t i) const { return spillway::cost_of(checks_[i], cost_); }
  std::optional<Micros> now() const { return now_; }
  Operation operation() const { return operation_; }
  // kReserve: what to keep (nullptr for the other operations).
  const ReserveSpec* reserve() const { return reserve_; }

  // A kReserve request. Errors as make()'s, and: an empty or too long id, a ttl not above 0,
  // not one label per key, a hold (ReservedLayer::hold) on a limit that is no concurrency limit.
  // The request points at `spec`: it must outlive the request (a temporary cannot).
  static Result<StoreRequest> make_reserve(std::span<const KeyedLimit> checks, std::int64_t cost,
                                           std::optional<Micros> now, const ReserveSpec& spec);
  static Result<StoreRequest> make_reserve(std::span<const KeyedLimit>, std::int64_t,
                                           std::optional<Micros>, ReserveSpec&&) = delete;

 private:
  StoreRequest(std::span<const KeyedLimit> checks, std::int64_t cost, std::optional<Micros> now,
               Operation operation)
      : checks_(checks), cost_(cost), now_(now), operation_(operation) {}

  friend struct OwnedRequest;  // a copy over its own keys: the same request, still valid
  friend class Store;          // its check forms validate with problem(), then build in place

  std::span<const KeyedLimit> checks_;
  std::int64_t cost_;
  std::optional<Micros> now_;
  Operation operation_;
  const ReserveSpec* reserve_ = nullptr;
};

class Store {
 public:
  virtual ~Store() = default;

  using AllCallback = std::function<void(Result<Decisions>)>;
  using Callback = std::function<void(Result<Decision>)>;

  // The one way a store decides: every request comes here (the forms below are built on it).
  // Every backend implements it; a wrapper (spillway/forwarding_store.h) overrides it to act on
  // the requests it passes on.
  // The answer goes to `done`: exactly once, possibly on another thread, possibly before this
  // returns. `done` must not block, nor throw. An answer ready at once (the memory store, an open
  // circuit, a cached denial) goes through complete_inline() (src/core/inline_completion.h): it
  // comes before this returns, except when this thread is already inside such an answer's
  // callback; then right after that callback returns, on this thread, in order. So a caller may
  // issue its next request from inside `done` without growing the stack.
  virtual void decide(const StoreRequest& request, AllCallback done) = 0;

  // The forms callers use; each validates its arguments (an error changes nothing) and calls
  // decide(). The synchronous ones block until the answer (at once on a store that decides
  // inline; never call them on an event loop with a network store). A single key is a request
  // with one key. A store that decides in place may override the two synchronous forms to skip
  // the request and the callback (the memory store does); they must decide as decide() does.
  virtual Result<Decision> check(std::string_view key, const Limit& limit, std::int64_t cost = 1,
                                 std::optional<Micros> now = std::nullopt);
  void check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                   std::optional<Micros> now, Callback done);
  virtual Result<Decisions> check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                      std::optional<Micros> now = std::nullopt);
  void check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                       std::optional<Micros> now, AllCallback done);
  // decide(), waiting for its answer. Safe from inside an inline answer's callback.
  Result<Decisions> decide_and_wait(const StoreRequest& request);

  // Settles a reservation made by a kReserve request (Settlement says how), exactly once: the
  // answer has one SettledLayer per key of the reservation. Errors, each changing nothing:
  // kNotFound (no such id, or it expired), kConflict (already settled or cancelled),
  // kInvalidArgument (a cost below 0, a label in `costs` that the reservation does not have).
  // The answer goes to `done` as decide()'s does. Default: kInvalidArgument (the store keeps no
  // reservations); a wrapper passes it on to the store it wraps.
  using SettleCallback = std::function<void(Result<Settled>)>;
  virtual void settle(const Settlement& settlement, SettleCallback done);
  Result<Settled> settle_and_wait(const Settlement& settlement);

  // Readiness: whether a check would work, not whether a socket is open (docs/SPEC.md §5).
  //
  // Whether the backend can decide now: a network backend has a connection and the last probe()
  // (if any was made) succeeded; a wrapper adds its own state (an open circuit is not ready). For
  // readiness probes (GET /readyz, gRPC health): cheap, no I/O. A check may still fail right
  // after true, and succeed right after false.
  virtual bool ready() const { return true; }

  // One round trip that does what a check does, to tell whether checks would work: a network
  // backend runs a script on its connection, as a check does (authentication, the script, a
  // write), on a reserved probe key that it deletes in the same step (no state is left, none a
  // caller's check reads); within the store's check timeout. Returns the error that says why a
  // check would fail (e.g. "NOAUTH … the server requires a password", "no reply in time", "READONLY
  // … a read-only replica"), and remembers the outcome for ready(): false after a failed probe,
  // until one succeeds. Blocks the calling thread (at most the check timeout): never call it from a
  // callback or an event loop. Default (the in-process store): ready at once. A wrapper passes it
  // on to the store it wraps (to the backend, for LocalFallbackStore); the circuit breaker closes
  // on a success.
  virtual Result<void> probe() { return {}; }

  // Waits up to `timeout` until a check would work (e.g. before a server accepts its first
  // request): a network backend connects, then probes (above) until a probe succeeds or the time
  // is up. Returns at once when the first probe succeeds; else the last probe's error. Takes at
  // most `timeout` plus one check timeout. Blocks the calling thread: never call it from a
  // callback or an event loop. Default (the in-process store): ready at once. A wrapper passes it
  // on to the store it wraps.
  virtual Result<void> wait_ready(std::chrono::milliseconds timeout) {
    (void)timeout;
    return {};
  }

  // One word for readiness probes and metrics: "ready", "unreachable" (not ready(): no
  // connection, or the last probe failed), or a wrapper's own state
  // (CircuitBreakerStore: "circuit_open").
  virtual std::string_view status() const { return ready() ? "ready" : "unreachable"; }

  // The backend's own metrics, as Prometheus text lines appended to `out` (a wrapper adds its
  // own and its inner store's). Default: none.
  virtual void append_metrics(std::string& out) const { (void)out; }

  // Forgets what a caching wrapper remembers (OverLimitCache's denials, LeaseStore's remembered
  // denials), e.g. after a config reload; a wrapper passes it on to the store it wraps. Default:
  // nothing to forget.
  virtual void clear_caches() {}

  // True when decide() always answers before it returns, without waiting on I/O (the in-process
  // store; a wrapper: as the store it wraps).
  virtual bool decides_inline() const { return false; }
};

// True when every decision admitted.
bool all_allowed(const Decisions& decisions);

// Checks one key's arguments as StoreRequest::make does (key length, cost range, now range); for
// callers that validate input before they build requests (e.g. a trace's lines).
Result<void> validate_check(std::string_view key, std::int64_t cost, std::optional<Micros> now);

// True when validate_check accepts these arguments: the same rule, in line, for the hot paths
// that call validate_check (for its error) only when this is false.
constexpr bool plainly_valid(std::string_view key, std::int64_t cost, std::optional<Micros> now) {
  return !key.empty() && key.size() <= kMaxKeyBytes && cost >= 0 &&
         (!now || (*now >= 0 && *now <= kMaxNow));
}

}  // namespace spillway
