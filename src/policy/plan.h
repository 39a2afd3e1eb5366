// One request's plan and the one executor that runs it against a Store (docs/ARCHITECTURE.md,
// "One plan, one executor"). Every front end (Policy for /v1/check, /v1/auth and reservations;
// /v1/limit; Envoy's RLS) resolves its input into a Plan and renders the Outcome; what happens
// between is written here once: the all-or-nothing request of the enforced items (a check, or a
// reservation), the shadow fan-out, the charges made after the work, the peeks that report a
// denied request's other limits, and the choice of the decision a request reports.
//
// Units: costs in the limits' units, times in microseconds. Ownership: a Plan is a view: its
// keys, limits, leases and reservation spec belong to the front end, which keeps them alive until
// `done` ran (execute() takes the Plan by shared_ptr so that it lives as long). Thread safety:
// execute() may be called from any thread; `done` runs once, on the thread the store answers on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "spillway/decision.h"
#include "spillway/error.h"
#include "spillway/store.h"

namespace spillway::policy {

// What an item does in its request.
enum class Role : std::uint8_t {
  // All-or-nothing with the other enforced items, in one store request: decides the request.
  kEnforce,
  // Decides nothing. Once the request is decided: charged on its own when it was admitted (or
  // with Plan::charge_each); when denied, peeked if Plan::report_denied, else not run. An error
  // changes nothing but Outcome::shadow_error.
  kShadow,
  // Charged without a check (Operation::kCharge), whatever is decided: usage reported after the
  // work ran. Never denies; an error fails the request.
  kCharge,
  // Denied by the front end before any store call (a caller an operator blocked): never sent;
  // its decision is `preset`, and the request is denied. With Plan::charge_each the other items
  // are still charged (each on its own); without, none is.
  kBlocked,
};

struct PlanItem {
  std::string_view key;
  const Limit* limit = nullptr;
  std::int64_t cost = kRequestCost;  // its own, else the plan's
  Role role = Role::kEnforce;
  const LeaseSpec* lease = nullptr;  // may be decided from a quota lease (spillway/lease.h)
  Decision preset;                   // kBlocked: its decision
};

struct Plan {
  std::vector<PlanItem> items;
  std::int64_t cost = 1;  // an item's cost when it has none of its own
  std::optional<Micros> now;
  // No all-or-nothing: each enforced item is charged when it alone admits, and shadow items are
  // charged whatever is decided (envoyproxy/ratelimit's way; RLS charge_on_deny).
  bool charge_each = false;
  // A denied request's items that were not charged are peeked (cost 0) to report their state;
  // an error of such a peek changes nothing (the denial stands). A denial the store answered
  // locally (Decision::local) peeks nothing: the items are left unconsulted.
  bool report_denied = false;
  // The enforced items' charges are kept as this reservation when admitted (Operation::kReserve;
  // its layers are the enforced items', in order). nullptr: a check.
  const ReserveSpec* reserve = nullptr;
};

struct ItemOutcome {
  // None: not run, a report-only peek that failed, or a shadow check that failed (its error is
  // Outcome::shadow_error).
  std::optional<Decision> decision;
  // Nothing was charged for it although it decides: an enforced item that admitted in a denied
  // all-or-nothing request (its state as it stands), a peek of a denied request, or an item a
  // local denial left unconsulted (no decision). Never the top item.
  bool report_only = false;
};

struct Outcome {
  bool admitted = true;
  bool denied_locally = false;        // a denial answered without the backend (Decision::local)
  std::vector<ItemOutcome> items;     // one per plan item, in order
  std::optional<std::size_t> top;     // the item whose decision the request reports (top_item)
  std::optional<Error> shadow_error;  // the error of the first shadow item (in order) that failed
};

// The decision a request reports, among the items that decide (every role but kShadow) and were
// decided and charged (not report_only): when one denies, the denying one with the longest wait
// (kNever the longest of all); else the one with the fewest remaining. The first wins a tie.
// nullopt when none was decided. The one top-decision rule of every front end; execute() sets
// Outcome::top with it.
std::optional<std::size_t> top_item(const Plan& plan, std::span<const ItemOutcome> items);

using OutcomeDone = std::function<void(Result<Outcome>)>;

// Runs `plan` against `store`. Errors: the store's error for an enforced or charged item, or a
// request the store refuses (kInvalidArgument). An empty plan is admitted with no call.
void execute(Store& store, std::shared_ptr<const Plan> plan, OutcomeDone done);

}  // namespace spillway::policy
