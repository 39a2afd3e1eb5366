#include "src/rls/rls_engine.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "src/core/text.h"
#include "src/policy/rate_headers.h"
#include "src/rls/rls_match.h"

namespace spillway::rls {
namespace {

// kCharged: a charge: after_response rule's descriptor with its own hits_addend (usage measured
// after the response), charged without a check (Operation::kCharge), never denied.
enum class Kind { kNone, kUnlimited, kBlocked, kEnforced, kShadow, kCharged };

std::uint32_t clamp_u32(std::int64_t value) {
  return static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(value, 0, std::numeric_limits<std::uint32_t>::max()));
}

// One request descriptor's plan and result.
struct Item {
  Kind kind = Kind::kNone;
  std::string stat_path;  // "" when no rule applies (nothing counted)
  std::optional<Limit> limit;
  CurrentLimit current;
  std::string key;
  std::int64_t cost = 1;      // the hits it asks for (metrics)
  std::int64_t cost_sum = 1;  // its cost and its repeats' (same_as): what it is checked for
  // Another item of the request with the same key and limit: checked once, for both costs, and
  // its decision is this one's too.
  std::optional<std::size_t> same_as;
  // Peeked only to report its state, because the request is already denied: never charged, and
  // an error from that peek does not fail the call (the denial stands).
  bool report_only = false;
  std::optional<Decision> decision;
};

// The limit the rate limit headers report beside the remaining: what that remaining counts down
// from (Limit::capacity(), the burst of a bucket algorithm, as the HTTP path's headers say), or
// the rule's requests_per_unit when nothing was counted.
std::int64_t header_limit(const DescriptorStatus& status, const Item& item) {
  return item.limit ? item.limit->capacity() : status.current_limit->requests_per_unit;
}

}  // namespace

struct RlsEngine::Call {
  std::shared_ptr<const RlsRules> rules;  // keeps the rules the items point into alive
  std::string domain;
  std::vector<Item> items;
  policy::Plan plan;                             // points into `items`
  std::vector<std::optional<std::size_t>> step;  // items[i]'s item in `plan`, if it has one
  Done done;
};

RlsEngine::RlsEngine(Store& store, std::shared_ptr<const RlsRules> rules, RlsOptions options)
    : store_(store), options_(std::move(options)), rules_(std::move(rules)) {
  if (!options_.clock) options_.clock = std::make_shared<SystemClock>();
  if (!rules_) rules_ = std::make_shared<RlsRules>();
}

void RlsEngine::set_rules(std::shared_ptr<const RlsRules> rules) {
  std::lock_guard lock(rules_mutex_);
  rules_ = rules ? std::move(rules) : std::make_shared<RlsRules>();
}

std::shared_ptr<const RlsRules> RlsEngine::rules() const {
  std::lock_guard lock(rules_mutex_);
  return rules_;
}

void RlsEngine::should_rate_limit(const RlsRequest& request, Done done) {
  if (request.domain.empty()) return done(invalid_argument("domain: must not be empty"));
  if (request.descriptors.empty()) {
    return done(invalid_argument("descriptors: a request needs at least one descriptor"));
  }
  if (request.descriptors.size() > kMaxDescriptors) {
    return done(invalid_argument("descriptors: " + std::to_string(request.descriptors.size()) +
                                 " descriptors, at most " + std::to_string(kMaxDescriptors)));
  }
  for (std::size_t i = 0; i < request.descriptors.size(); ++i) {
    const RlsDescriptor& d = request.descriptors[i];
    const std::string path = "descriptors[" + std::to_string(i) + "]";
    if (d.entries.empty()) return done(invalid_argument(path + ".entries: must not be empty"));
    if (d.entries.size() > kMaxEntries) {
      return done(invalid_argument(path + ".entries: " + std::to_string(d.entries.size()) +
                                   " entries, at most " + std::to_string(kMaxEntries)));
    }
    for (std::size_t j = 0; j < d.entries.size(); ++j) {
      if (d.entries[j].key.empty()) {
        return done(
            invalid_argument(path + ".entries[" + std::to_string(j) + "].key: must not be empty"));
      }
    }
  }

  if (options_.tenants.active()) {
    // A blocked caller is denied here as on /v1/check: before any rule, nothing charged. The
    // answer is built only when one is (no allocation for the others).
    std::optional<RlsResponse> blocked;
    for (std::size_t i = 0; i < request.descriptors.size(); ++i) {
      if (!options_.tenants.blocked(request.descriptors[i].entries)) continue;
      if (!blocked) blocked.emplace().statuses.resize(request.descriptors.size());
      blocked->statuses[i].code = Code::kOverLimit;
      blocked->overall_code = Code::kOverLimit;
    }
    if (blocked) return done(std::move(*blocked));
  }

  auto call = std::make_shared<Call>();
  call->rules = rules();
  call->domain = request.domain;
  call->done = std::move(done);
  call->items.resize(request.descriptors.size());
  const auto domain_it = call->rules->domains.find(request.domain);
  call->step.resize(call->items.size());
  if (domain_it == call->rules->domains.end()) {
    return finish(call, policy::Outcome{});  // unknown domain: all OK
  }
  const DomainRules& domain = domain_it->second;

  const std::int64_t request_cost = request.hits_addend == 0 ? 1 : request.hits_addend;
  std::set<std::string, std::less<>> replaced;
  std::vector<const RuleLimit*> rule_limits(call->items.size(), nullptr);
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    const RlsDescriptor& d = request.descriptors[i];
    Item& item = call->items[i];
    const Match match = match_descriptor(domain, d.entries);
    const RuleLimit* rule = match.rule ? &*match.rule->rate_limit : nullptr;
    const bool shadow = match.rule && match.rule->shadow_mode;
    const std::int64_t cost =
        d.hits_addend
            ? static_cast<std::int64_t>(std::min<std::uint64_t>(*d.hits_addend, kMaxExact))
            : request_cost;
    item.cost = cost;
    item.cost_sum = cost;
    if (d.limit && d.limit->unit != Unit::kUnknown) {
      // An override: the request's limit with the matched rule's algorithm; never shadow_mode and
      // no name (as envoyproxy/ratelimit: the caller asked for this limit to be enforced).
      item.stat_path = match.rule ? match.stat_path : "";
      if (item.stat_path.empty()) {
        for (const RlsEntry& e : d.entries)
          item.stat_path += (item.stat_path.empty() ? "" : ".") + e.key;
      }
      item.current = {"", d.limit->requests_per_unit, d.limit->unit};
      if (d.limit->requests_per_unit == 0) {
        item.kind = Kind::kBlocked;
      } else {
        const Algorithm algorithm =
            rule && rule->limit ? rule->limit->algorithm() : Algorithm::kFixedWindow;
        Result<Limit> limit =
            Limit::make(algorithm, d.limit->requests_per_unit, unit_length(d.limit->unit));
        if (!limit) {
          return call->done(invalid_argument("descriptors[" + std::to_string(i) +
                                             "].limit: " + limit.error().message));
        }
        item.limit = *limit;
        item.kind = Kind::kEnforced;
      }
      continue;
    }
    if (rule == nullptr) continue;  // no rule: OK without a limit
    // An unlimited rule may replace others but is never replaced (as envoyproxy/ratelimit).
    if (!rule->unlimited) rule_limits[i] = rule;
    item.stat_path = match.stat_path;
    for (const std::string& name : rule->replaces) {
      if (name != rule->name) replaced.insert(name);
    }
    item.current = {rule->name, rule->requests_per_unit, rule->unit};
    if (rule->unlimited) {
      item.kind = Kind::kUnlimited;
    } else if (!rule->limit) {
      item.kind = Kind::kBlocked;
    } else {
      item.limit = *rule->limit;
      item.kind = shadow ? Kind::kShadow : Kind::kEnforced;
      if (rule->charge_after_response && d.hits_addend) item.kind = Kind::kCharged;
    }
  }
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    if (rule_limits[i] && !rule_limits[i]->name.empty() &&
        replaced.contains(rule_limits[i]->name)) {
      call->items[i] = Item{};  // dropped by another rule of this request
    }
  }

  for (std::size_t i = 0; i < call->items.size(); ++i) {
    Item& item = call->items[i];
    // Only a descriptor that needs a counter needs a key, and one the store takes.
    if (item.kind == Kind::kEnforced || item.kind == Kind::kShadow || item.kind == Kind::kCharged) {
      item.key = rls_key(request.domain, request.descriptors[i].entries);
    }
    if (item.key.size() > kMaxKeyBytes) {
      return call->done(invalid_argument(
          "descriptors[" + std::to_string(i) + "]: its entries make a key of " +
          std::to_string(item.key.size()) + " bytes, at most " + std::to_string(kMaxKeyBytes)));
    }
  }
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    Item& item = call->items[i];
    if (item.kind != Kind::kEnforced && item.kind != Kind::kShadow) continue;
    // The same key and limit again (a descriptor repeated): one check for the sum of the costs.
    for (std::size_t j = 0; j < i; ++j) {
      Item& first = call->items[j];
      if (!first.same_as && first.kind == item.kind && first.key == item.key &&
          first.limit == item.limit) {
        item.same_as = j;
        first.cost_sum = std::min<std::int64_t>(first.cost_sum + item.cost, kMaxExact);
        break;
      }
    }
  }
  // The plan: each descriptor with a counter (or a block), in order, with its role.
  call->plan.charge_each = options_.charge_on_deny;
  call->plan.report_denied = true;
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    const Item& item = call->items[i];
    if (item.same_as || item.kind == Kind::kNone || item.kind == Kind::kUnlimited) continue;
    policy::PlanItem step{.key = item.key, .limit = item.limit ? &*item.limit : nullptr};
    if (item.kind == Kind::kBlocked) {
      step.role = policy::Role::kBlocked;
      step.preset = Decision{.allowed = false, .retry_after = kNever};
    } else if (item.kind == Kind::kCharged) {
      // Charged whatever the others decide: the work it reports has run.
      step.role = policy::Role::kCharge;
      step.cost = item.cost;
    } else {
      step.role = item.kind == Kind::kShadow ? policy::Role::kShadow : policy::Role::kEnforce;
      // A cost above the limit can never pass; past limit + 1 it is all the same to the store.
      const std::int64_t most = std::max(item.limit->limit(), item.limit->burst()) + 1;
      step.cost = std::min(item.cost_sum, most);
    }
    call->step[i] = call->plan.items.size();
    call->plan.items.push_back(step);
  }
  std::shared_ptr<const policy::Plan> plan(call, &call->plan);
  policy::execute(store_, std::move(plan), [this, call](Result<policy::Outcome> outcome) {
    finish(call, std::move(outcome));
  });
}

void RlsEngine::finish(const std::shared_ptr<Call>& call, Result<policy::Outcome> outcome) {
  if (!outcome) return call->done(std::unexpected(std::move(outcome.error())));
  // A shadow rule's backend error fails the call too: its count would be missing.
  if (outcome->shadow_error) return call->done(std::unexpected(*outcome->shadow_error));
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    Item& item = call->items[i];
    const std::size_t from = item.same_as ? *item.same_as : i;
    if (!call->step[from]) continue;
    const policy::ItemOutcome& step = outcome->items[*call->step[from]];
    item.decision = step.decision;
    item.report_only = step.report_only;
    if (outcome->denied_locally && item.report_only && !item.decision) {
      // Denied without a backend call: not consulted, reported as its limit.
      item.decision = Decision{.allowed = true,
                               .limit = item.limit->limit(),
                               .remaining = item.limit->limit(),
                               .local = true};
    }
  }
  RlsResponse response;
  response.statuses.reserve(call->items.size());
  const Micros now = options_.clock->now();
  for (Item& item : call->items) {
    DescriptorStatus status;
    const auto count = [&](std::initializer_list<Stat> stats) {
      if (!item.stat_path.empty()) {
        stats_.add(call->domain, item.stat_path, stats, static_cast<std::uint64_t>(item.cost));
      }
    };
    switch (item.kind) {
      case Kind::kNone:
        break;
      case Kind::kUnlimited:
        status.limit_remaining = std::numeric_limits<std::uint32_t>::max();
        count({Stat::kTotalHits, Stat::kWithinLimit});
        break;
      case Kind::kBlocked: {
        status.code = Code::kOverLimit;
        status.current_limit = item.current;
        const Micros unit = unit_length(item.current.unit);
        status.duration_until_reset = unit > 0 ? unit - now % unit : 0;
        count({Stat::kTotalHits, Stat::kOverLimit});
        break;
      }
      case Kind::kCharged:  // charged as debt: OK, with the key's state after the charge
        status.current_limit = item.current;
        if (item.decision) {
          status.limit_remaining = clamp_u32(item.decision->remaining);
          status.duration_until_reset = item.decision->reset_after;
        }
        count({Stat::kTotalHits, Stat::kWithinLimit});
        break;
      case Kind::kEnforced:
      case Kind::kShadow: {
        status.current_limit = item.current;
        if (item.report_only || !item.decision) {
          // Not charged (the request was denied by another descriptor); reported as it stands,
          // or without a count when that peek failed.
          if (item.decision) {
            status.limit_remaining = clamp_u32(item.decision->remaining);
            status.duration_until_reset = item.decision->reset_after;
          }
          count({Stat::kTotalHits});
          break;
        }
        const Decision& d = *item.decision;
        const bool shadow = item.kind == Kind::kShadow;
        status.limit_remaining = clamp_u32(d.remaining);
        status.duration_until_reset =
            d.allowed || d.retry_after == kNever ? d.reset_after : d.retry_after;
        if (!d.allowed) {
          if (!shadow) status.code = Code::kOverLimit;
          if (shadow) {
            count({Stat::kTotalHits, Stat::kOverLimit, Stat::kShadowMode});
          } else if (d.local) {
            count({Stat::kTotalHits, Stat::kOverLimit, Stat::kLocalCache});
          } else {
            count({Stat::kTotalHits, Stat::kOverLimit});
          }
        } else if (d.remaining * 5 < d.limit) {
          count({Stat::kTotalHits, Stat::kWithinLimit, Stat::kNearLimit});
        } else {
          count({Stat::kTotalHits, Stat::kWithinLimit});
        }
        break;
      }
    }
    if (status.code == Code::kOverLimit) response.overall_code = Code::kOverLimit;
    response.statuses.push_back(std::move(status));
  }
  // The headers describe the limit that decided (the one top-decision rule, policy::top_item);
  // shadow rules never show (they decide nothing).
  const DescriptorStatus* tightest = nullptr;
  const Item* tightest_item = nullptr;
  for (std::size_t i = 0; outcome->top && i < call->items.size(); ++i) {
    if (call->step[i] != outcome->top) continue;
    tightest = &response.statuses[i];
    tightest_item = &call->items[i];
    break;
  }
  if (tightest != nullptr && options_.response_headers != ResponseHeaders::kOff) {
    policy::add_rate_headers(options_.response_headers == ResponseHeaders::kXRateLimit
                                 ? policy::RateHeaderNames::kXRateLimit
                                 : policy::RateHeaderNames::kDraft,
                             header_limit(*tightest, *tightest_item), tightest->limit_remaining,
                             tightest->duration_until_reset, std::nullopt,
                             [&](std::string_view name, std::string value) {
                               response.response_headers.emplace_back(name, std::move(value));
                             });
  }
  call->done(std::move(response));
}

}  // namespace spillway::rls
