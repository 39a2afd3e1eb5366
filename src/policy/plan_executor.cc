// The executor of src/policy/plan.h: the enforced items in one all-or-nothing store request
// (unless a blocked item denied the request first, or Plan::charge_each), then every other call
// of the request at once (shadow checks, charges, report-only peeks, charge_each's single
// checks); the last answer finishes the request. Thread safety: the answers may come on any
// threads; a Run's shared state is under its mutex.
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "src/core/inline_completion.h"
#include "src/policy/plan.h"

namespace spillway::policy {
namespace {

// One request in flight.
struct Run {
  std::shared_ptr<const Plan> plan;
  OutcomeDone done;
  Outcome out;
  std::vector<KeyedLimit> enforced;  // the all-or-nothing request's keys (its view's storage)
  std::mutex mutex;
  std::size_t left = 0;
  std::optional<Error> error;         // the first error that fails the request
  std::size_t shadow_error_item = 0;  // the item whose error is Outcome::shadow_error
};

bool decides(Role role) { return role != Role::kShadow; }

// `at_once`: answered before execute() returned, through complete_inline (a caller that chains
// requests from `done` must not grow its stack).
void finish(const std::shared_ptr<Run>& run, bool at_once = false) {
  if (run->error) return run->done(std::unexpected(std::move(*run->error)));
  const Plan& plan = *run->plan;
  Outcome& out = run->out;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const std::optional<Decision>& d = out.items[i].decision;
    if (!decides(plan.items[i].role) || !d || d->allowed || out.items[i].report_only) continue;
    out.admitted = false;
    if (d->local) out.denied_locally = true;
  }
  if (!out.admitted) {
    // Nothing an enforced item admitted was charged, unless each was charged on its own.
    for (std::size_t i = 0; i < plan.items.size(); ++i) {
      ItemOutcome& item = out.items[i];
      if (plan.items[i].role == Role::kEnforce && !plan.charge_each && item.decision &&
          item.decision->allowed) {
        item.report_only = true;
      }
    }
  }
  out.top = top_item(plan, out.items);
  if (at_once) return complete_inline(run->done, Result<Outcome>(std::move(out)));
  run->done(std::move(out));
}

// One call of the fan-out answered: the last one finishes the request (`at_once`: the fan-out's
// own count, inside execute()).
void one_answered(const std::shared_ptr<Run>& run, bool at_once = false) {
  {
    std::lock_guard lock(run->mutex);
    if (--run->left > 0) return;
  }
  finish(run, at_once);
}

enum class Single : std::uint8_t { kCharge, kPeek, kChargeWithoutCheck };

// Sends item i on its own: charged (checked), peeked, or charged without a check.
void send_single(Store& store, const std::shared_ptr<Run>& run, std::size_t i, Single what) {
  const Plan& plan = *run->plan;
  const PlanItem& item = plan.items[i];
  // Sent with the request's cost alone, so that a peek is a request of cost 0.
  const KeyedLimit one[] = {{item.key, item.limit, kRequestCost, item.lease}};
  const std::int64_t cost =
      what == Single::kPeek ? 0 : cost_of(KeyedLimit{.cost = item.cost}, plan.cost);
  Result<StoreRequest> request = StoreRequest::make(
      one, cost, plan.now,
      what == Single::kChargeWithoutCheck ? Operation::kCharge : Operation::kCheck);
  auto answered = [run, i, what](Result<Decisions> decisions) {
    {
      std::lock_guard lock(run->mutex);
      ItemOutcome& answer = run->out.items[i];
      if (decisions) {
        answer.decision = decisions->front();
      } else if (what == Single::kPeek) {
        // A peek's error changes nothing.
      } else if (run->plan->items[i].role != Role::kShadow) {
        if (!run->error) run->error = decisions.error();
      } else if (!run->out.shadow_error || i < run->shadow_error_item) {
        // A shadow item's error is only reported: the first in the plan's order.
        run->out.shadow_error = decisions.error();
        run->shadow_error_item = i;
      }
    }
    one_answered(run);
  };
  if (!request) return answered(std::unexpected(request.error()));
  store.decide(*request, std::move(answered));
}

// Everything after the all-or-nothing request (or instead of it: `at_once`, inside execute()).
void fan_out(Store& store, const std::shared_ptr<Run>& run, bool denied, bool at_once) {
  const Plan& plan = *run->plan;
  Outcome& out = run->out;
  bool denied_locally = false;
  for (const ItemOutcome& item : out.items) {
    if (item.decision && !item.decision->allowed && item.decision->local) denied_locally = true;
  }
  std::vector<std::pair<std::size_t, Single>> sends;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const PlanItem& item = plan.items[i];
    const bool peek = denied && plan.report_denied;
    switch (item.role) {
      case Role::kBlocked:
        break;
      case Role::kCharge:
        sends.emplace_back(i, Single::kChargeWithoutCheck);
        break;
      case Role::kEnforce:
      case Role::kShadow:
        if (item.role == Role::kEnforce && out.items[i].decision) break;  // decided already
        if (plan.charge_each || (!denied && item.role == Role::kShadow)) {
          sends.emplace_back(i, Single::kCharge);
        } else if (peek) {
          out.items[i].report_only = true;
          if (!denied_locally) sends.emplace_back(i, Single::kPeek);  // else left unconsulted
        }
        break;
    }
  }
  if (sends.empty()) return finish(run, at_once);
  run->left = sends.size() + 1;  // + this loop: no answer finishes the request before it ends
  for (const auto& [i, what] : sends) send_single(store, run, i, what);
  one_answered(run, at_once);
}

}  // namespace

std::optional<std::size_t> top_item(const Plan& plan, std::span<const ItemOutcome> items) {
  std::optional<std::size_t> top;
  bool denied = false;
  // "Never" (-1) is the longest wait of all.
  const auto wait = [](const Decision& d) {
    return d.retry_after == kNever ? std::numeric_limits<Micros>::max() : d.retry_after;
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!decides(plan.items[i].role) || !items[i].decision || items[i].report_only) continue;
    const Decision& d = *items[i].decision;
    if (!d.allowed) {
      if (!denied || wait(d) > wait(*items[*top].decision)) top = i;
      denied = true;
    } else if (!denied && (!top || d.remaining < items[*top].decision->remaining)) {
      top = i;
    }
  }
  return top;
}

void execute(Store& store, std::shared_ptr<const Plan> plan, OutcomeDone done) {
  auto run = std::make_shared<Run>();
  run->plan = std::move(plan);
  run->done = std::move(done);
  const Plan& p = *run->plan;
  run->out.items.resize(p.items.size());
  bool denied = false;
  for (std::size_t i = 0; i < p.items.size(); ++i) {
    const PlanItem& item = p.items[i];
    if (item.role == Role::kBlocked) {
      run->out.items[i].decision = item.preset;
      if (!p.charge_each) denied = true;
    } else if (item.role == Role::kEnforce) {
      run->enforced.push_back({item.key, item.limit, item.cost, item.lease});
    }
  }
  if (denied || p.charge_each || run->enforced.empty()) return fan_out(store, run, denied, true);

  Result<StoreRequest> request =
      p.reserve == nullptr ? StoreRequest::make(run->enforced, p.cost, p.now)
                           : StoreRequest::make_reserve(run->enforced, p.cost, p.now, *p.reserve);
  if (!request) {
    // Inline: a caller that chains requests from `done` must not grow its stack.
    return complete_inline(run->done, Result<Outcome>(std::unexpected(request.error())));
  }
  store.decide(*request, [&store, run](Result<Decisions> decisions) {
    if (!decisions) return run->done(std::unexpected(decisions.error()));
    if (decisions->size() != run->enforced.size()) {
      return run->done(std::unexpected(
          Error{Errc::kInternal, "the store answered " + std::to_string(decisions->size()) +
                                     " decisions for " + std::to_string(run->enforced.size()) +
                                     " keys"}));
    }
    const std::vector<PlanItem>& items = run->plan->items;
    bool any_denied = false;
    std::size_t k = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].role != Role::kEnforce) continue;
      const Decision& d = (*decisions)[k++];
      run->out.items[i].decision = d;
      if (!d.allowed) any_denied = true;
    }
    fan_out(store, run, any_denied, false);
  });
}

}  // namespace spillway::policy
