#include "src/rls/rls_engine.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <set>

#include "src/core/text.h"
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

std::string reset_seconds(Micros duration) {
  return std::to_string((std::max<Micros>(duration, 0) + kMicrosPerSecond - 1) / kMicrosPerSecond);
}

// One request descriptor's plan and result.
struct Item {
  Kind kind = Kind::kNone;
  std::string stat_path;  // "" when no rule applies (nothing counted)
  std::optional<Limit> limit;
  CurrentLimit current;
  std::string key;
  std::int64_t cost = 1;        // the hits it asks for (metrics)
  std::int64_t check_cost = 1;  // what is sent to the store (0: a peek)
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
  std::vector<std::vector<std::size_t>> groups;  // all-or-nothing checks, run in order
  std::vector<std::size_t> rest;                 // single checks, run together at the end
  bool denied = false;
  bool denied_locally = false;  // by the over-limit cache: the report-only peeks are skipped too
  Done done;
  std::atomic<std::size_t> pending{0};
  std::mutex error_mutex;
  std::optional<Error> error;

  void fail(Error e) {
    std::lock_guard lock(error_mutex);
    if (!error) error = std::move(e);
  }
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
  if (domain_it == call->rules->domains.end()) return finish(call);  // unknown domain: all OK
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
    if (item.kind == Kind::kBlocked && !options_.charge_on_deny) call->denied = true;
  }
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    Item& item = call->items[i];
    if (item.kind == Kind::kCharged) {
      // Charged whatever the others decide: the work it reports has run.
      item.check_cost = item.cost;
      call->rest.push_back(i);
    }
    if (item.kind != Kind::kEnforced && item.kind != Kind::kShadow) continue;
    item.check_cost = item.cost;
    // The same key and limit again (a descriptor repeated): one check for the sum of the costs.
    for (std::size_t j = 0; j < i; ++j) {
      Item& first = call->items[j];
      if (!first.same_as && first.kind == item.kind && first.key == item.key &&
          first.limit == item.limit) {
        item.same_as = j;
        first.check_cost = std::min<std::int64_t>(first.check_cost + item.cost, kMaxExact);
        break;
      }
    }
  }
  for (std::size_t i = 0; i < call->items.size(); ++i) {
    Item& item = call->items[i];
    if (item.same_as || (item.kind != Kind::kEnforced && item.kind != Kind::kShadow)) continue;
    // A cost above the limit can never pass; past limit + 1 it is all the same to the store.
    const std::int64_t most = std::max(item.limit->limit(), item.limit->burst()) + 1;
    item.check_cost = std::min(item.check_cost, most);
    if (item.kind == Kind::kShadow) {
      call->rest.push_back(i);
    } else if (options_.charge_on_deny || item.check_cost == 0) {
      call->rest.push_back(i);
    } else if (call->denied) {
      item.check_cost = 0;
      item.report_only = true;
      call->rest.push_back(i);
    } else {
      // Into the first group of the same cost that does not hold the key yet.
      auto group = std::find_if(call->groups.begin(), call->groups.end(), [&](const auto& g) {
        return call->items[g.front()].check_cost == item.check_cost &&
               std::none_of(g.begin(), g.end(),
                            [&](std::size_t j) { return call->items[j].key == item.key; });
      });
      if (group == call->groups.end()) {
        call->groups.push_back({i});
      } else {
        group->push_back(i);
      }
    }
  }
  run_enforced(call, 0);
}

void RlsEngine::run_enforced(const std::shared_ptr<Call>& call, std::size_t group) {
  if (group >= call->groups.size()) return run_rest(call);
  const std::vector<std::size_t>& members = call->groups[group];
  if (call->denied) {
    // An earlier group denied: the rest are only reported (peeked), never charged.
    for (std::size_t i : members) {
      call->items[i].check_cost = 0;
      call->items[i].report_only = true;
      call->rest.push_back(i);
    }
    return run_enforced(call, group + 1);
  }
  // Records a group's decisions, then goes on with the next group.
  const auto decided = [this, call, group](Result<Decisions> decisions) {
    const std::vector<std::size_t>& checked = call->groups[group];
    if (!decisions) {
      call->fail(decisions.error());
      return finish(call);
    }
    for (std::size_t k = 0; k < checked.size(); ++k) {
      call->items[checked[k]].decision = (*decisions)[k];
    }
    for (const Decision& d : *decisions) {
      if (d.allowed) continue;
      call->denied = true;
      if (d.local) call->denied_locally = true;
    }
    run_enforced(call, group + 1);
  };
  if (members.size() == 1) {
    // One key: a single check decides the same, and single checks are batched with other calls'
    // (one script call for many requests on Redis).
    const Item& item = call->items[members.front()];
    return store_.check_async(item.key, *item.limit, item.check_cost, std::nullopt,
                              [decided](Result<Decision> decision) {
                                if (!decision) return decided(std::unexpected(decision.error()));
                                decided(Decisions{*decision});
                              });
  }
  std::vector<KeyedLimit> checks;
  checks.reserve(members.size());
  for (std::size_t i : members) checks.push_back({call->items[i].key, &*call->items[i].limit});
  store_.check_all_async(checks, call->items[members.front()].check_cost, std::nullopt, decided);
}

void RlsEngine::run_rest(const std::shared_ptr<Call>& call) {
  for (std::size_t i : call->rest) {
    Item& item = call->items[i];
    // Shadow rules are charged with an admitted request (or always, with charge_on_deny).
    if (item.kind == Kind::kShadow && call->denied && !options_.charge_on_deny) {
      item.check_cost = 0;
      item.report_only = true;
    }
  }
  if (call->denied_locally) {
    // Denied without a backend call: do not make one just to report the others' state.
    std::erase_if(call->rest, [call](std::size_t i) {
      Item& item = call->items[i];
      if (!item.report_only) return false;
      item.decision = Decision{.allowed = true,
                               .limit = item.limit->limit(),
                               .remaining = item.limit->limit(),
                               .local = true};
      return true;
    });
  }
  if (call->rest.empty()) return finish(call);
  call->pending.store(call->rest.size() + 1);
  auto one_done = [this, call]() {
    if (call->pending.fetch_sub(1) == 1) finish(call);
  };
  for (std::size_t i : call->rest) {
    Item& item = call->items[i];
    if (item.kind == Kind::kCharged) {
      const KeyedLimit charged[] = {{item.key, &*item.limit}};
      Result<StoreRequest> request =
          StoreRequest::make(charged, item.check_cost, std::nullopt, Operation::kCharge);
      if (!request) {
        call->fail(request.error());
        one_done();
        continue;
      }
      store_.decide(*request, [call, i, one_done](Result<Decisions> decisions) {
        if (decisions) {
          call->items[i].decision = decisions->front();
        } else {
          call->fail(decisions.error());
        }
        one_done();
      });
      continue;
    }
    store_.check_async(item.key, *item.limit, item.check_cost, std::nullopt,
                       [call, i, one_done](Result<Decision> decision) {
                         if (decision) {
                           call->items[i].decision = *decision;
                         } else if (!call->items[i].report_only) {
                           call->fail(decision.error());
                         }
                         one_done();
                       });
  }
  one_done();
}

void RlsEngine::finish(const std::shared_ptr<Call>& call) {
  if (call->error) return call->done(std::unexpected(*call->error));
  RlsResponse response;
  response.statuses.reserve(call->items.size());
  const DescriptorStatus* tightest = nullptr;
  const Item* tightest_item = nullptr;
  const Micros now = options_.clock->now();
  for (Item& item : call->items) {
    if (item.same_as) {
      item.decision = call->items[*item.same_as].decision;
      item.report_only = call->items[*item.same_as].report_only;
    }
  }
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
  // The headers describe the limit that decided: an over-limit descriptor when there is one,
  // else the one with the least remaining; shadow rules never show (they decide nothing).
  for (std::size_t i = 0; i < response.statuses.size(); ++i) {
    const DescriptorStatus& status = response.statuses[i];
    if (!status.current_limit || call->items[i].kind == Kind::kShadow) continue;
    const bool over = status.code == Code::kOverLimit;
    const bool tightest_over = tightest != nullptr && tightest->code == Code::kOverLimit;
    if (tightest == nullptr || (over && !tightest_over) ||
        (over == tightest_over && status.limit_remaining < tightest->limit_remaining)) {
      tightest = &status;
      tightest_item = &call->items[i];
    }
  }
  if (tightest != nullptr && options_.response_headers != ResponseHeaders::kOff) {
    const std::string prefix =
        options_.response_headers == ResponseHeaders::kXRateLimit ? "X-RateLimit-" : "RateLimit-";
    response.response_headers = {
        {prefix + "Limit", std::to_string(header_limit(*tightest, *tightest_item))},
        {prefix + "Remaining", std::to_string(tightest->limit_remaining)},
        {prefix + "Reset", reset_seconds(tightest->duration_until_reset)}};
  }
  call->done(std::move(response));
}

}  // namespace spillway::rls
