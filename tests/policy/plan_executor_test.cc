// The one executor (src/policy/plan.h): the enforced items all-or-nothing, the shadow fan-out,
// charges after the work, report-only peeks of a denied request, items blocked up front,
// charge_each, errors, and the one top-decision rule, on the memory store with a manual clock.
#include <gtest/gtest.h>

#include "spillway/memory_store.h"
#include "spillway/policy_engine.h"
#include "src/policy/plan.h"
#include "src/policy/policy_plan.h"

namespace spillway::policy {
namespace {

constexpr Micros kStart = 1'000'000'000'000;

Limit per_minute(std::int64_t n) {
  return *Limit::make(Algorithm::kFixedWindow, n, 60 * kMicrosPerSecond);
}

// A store that fails every request whose first key is `failing`.
class FailsKey final : public Store {
 public:
  FailsKey(Store& inner, std::string failing) : inner_(inner), failing_(std::move(failing)) {}
  void decide(const StoreRequest& request, AllCallback done) override {
    ++calls;
    if (request.checks().front().key == failing_) {
      return done(std::unexpected(Error{Errc::kUnavailable, "down"}));
    }
    inner_.decide(request, std::move(done));
  }
  int calls = 0;

 private:
  Store& inner_;
  std::string failing_;
};

struct Fixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(kStart);
  MemoryStore store{MemoryStoreOptions{.clock = clock}};
  Limit one = per_minute(1);
  Limit five = per_minute(5);

  Result<Outcome> run(Store& target, Plan plan) {
    std::optional<Result<Outcome>> answer;
    execute(target, std::make_shared<const Plan>(std::move(plan)),
            [&](Result<Outcome> outcome) { answer = std::move(outcome); });
    EXPECT_TRUE(answer.has_value()) << "the memory store answers inline";
    return answer ? std::move(*answer) : Result<Outcome>(std::unexpected(Error{}));
  }
  Result<Outcome> run(Plan plan) { return run(store, std::move(plan)); }

  std::int64_t remaining(std::string_view key, const Limit& limit) {
    return store.check(key, limit, 0)->remaining;
  }
};

TEST(PlanExecutor, EnforcedItemsAreAllOrNothing) {
  Fixture f;
  const Plan plan{.items = {{.key = "a", .limit = &f.five}, {.key = "b", .limit = &f.one}}};
  Result<Outcome> first = f.run(plan);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->admitted);
  Result<Outcome> second = f.run(plan);
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->admitted);
  EXPECT_TRUE(second->items[0].report_only) << "admitted by a but not charged";
  EXPECT_FALSE(second->items[1].decision->allowed);
  EXPECT_EQ(second->top, 1u) << "the denying item";
  EXPECT_EQ(f.remaining("a", f.five), 4) << "a was charged once only";
}

TEST(PlanExecutor, ItemsOfDifferentCostsAreOneAllOrNothingRequest) {
  Fixture f;
  // a costs 2 of 5, b 1 of 1: b denies the second time, and a is not charged then.
  const Plan plan{.items = {{.key = "a", .limit = &f.five, .cost = 2},
                            {.key = "b", .limit = &f.one, .cost = 1}}};
  ASSERT_TRUE(f.run(plan)->admitted);
  EXPECT_FALSE(f.run(plan)->admitted);
  EXPECT_EQ(f.remaining("a", f.five), 3);
}

TEST(PlanExecutor, ShadowItemsAreChargedOnlyWhenAdmitted) {
  Fixture f;
  const Plan plan{.items = {{.key = "e", .limit = &f.one},
                            {.key = "s", .limit = &f.five, .role = Role::kShadow}}};
  Result<Outcome> admitted = f.run(plan);
  ASSERT_TRUE(admitted.has_value());
  EXPECT_TRUE(admitted->admitted);
  EXPECT_EQ(admitted->items[1].decision->remaining, 4);
  Result<Outcome> denied = f.run(plan);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->admitted);
  EXPECT_FALSE(denied->items[1].decision.has_value()) << "not run without report_denied";
  EXPECT_EQ(f.remaining("s", f.five), 4);
}

TEST(PlanExecutor, AShadowItemNeverDeniesAndItsErrorIsOnlyReported) {
  Fixture f;
  FailsKey failing(f.store, "s2");
  Plan plan{.items = {{.key = "e", .limit = &f.five},
                      {.key = "s1", .limit = &f.one, .role = Role::kShadow},
                      {.key = "s2", .limit = &f.one, .role = Role::kShadow}}};
  ASSERT_TRUE(f.run(failing, plan)->admitted);
  Result<Outcome> second = f.run(failing, plan);
  ASSERT_TRUE(second.has_value()) << "a shadow item's error fails nothing";
  EXPECT_TRUE(second->admitted) << "s1 is over its limit, and decides nothing";
  EXPECT_FALSE(second->items[1].decision->allowed);
  ASSERT_TRUE(second->shadow_error.has_value());
  EXPECT_EQ(second->shadow_error->message, "down");
  EXPECT_EQ(second->top, 0u) << "a shadow item is never the top decision";
}

TEST(PlanExecutor, ADeniedRequestPeeksTheOthersWhenAskedAndAFailedPeekKeepsTheDenial) {
  Fixture f;
  FailsKey failing(f.store, "peeked");
  Plan plan{.items = {{.key = "blocked", .limit = &f.one, .role = Role::kBlocked},
                      {.key = "e", .limit = &f.five},
                      {.key = "peeked", .limit = &f.five, .role = Role::kShadow}},
            .report_denied = true};
  plan.items[0].preset = Decision{.allowed = false, .retry_after = kNever};
  Result<Outcome> out = f.run(failing, plan);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_FALSE(out->admitted);
  EXPECT_TRUE(out->items[1].report_only);
  EXPECT_EQ(out->items[1].decision->remaining, 5) << "peeked: uncharged";
  EXPECT_TRUE(out->items[2].report_only);
  EXPECT_FALSE(out->items[2].decision.has_value()) << "its peek failed";
  EXPECT_FALSE(out->shadow_error.has_value()) << "a failed peek is no error";
  EXPECT_EQ(out->top, 0u);
  EXPECT_EQ(f.remaining("e", f.five), 5);
}

TEST(PlanExecutor, ChargeEachChargesWhatAdmitsOnItsOwn) {
  Fixture f;
  const Plan plan{.items = {{.key = "a", .limit = &f.five}, {.key = "b", .limit = &f.one}},
                  .charge_each = true};
  ASSERT_TRUE(f.run(plan)->admitted);
  EXPECT_FALSE(f.run(plan)->admitted);
  EXPECT_EQ(f.remaining("a", f.five), 3) << "charged although the request was denied";
}

TEST(PlanExecutor, ChargesAreMadeWhateverIsDecidedAndTheirErrorsFail) {
  Fixture f;
  const Plan plan{.items = {{.key = "e", .limit = &f.one},
                            {.key = "used", .limit = &f.five, .cost = 3, .role = Role::kCharge}}};
  ASSERT_TRUE(f.run(plan)->admitted);
  Result<Outcome> denied = f.run(plan);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->admitted);
  EXPECT_EQ(f.remaining("used", f.five), 0) << "3 + 3 charged: the work ran";
  FailsKey failing(f.store, "used");
  Result<Outcome> failed = f.run(failing, plan);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message, "down");
}

TEST(PlanExecutor, AnEnforcedErrorFailsTheRequest) {
  Fixture f;
  FailsKey failing(f.store, "e");
  Result<Outcome> out = f.run(failing, Plan{.items = {{.key = "e", .limit = &f.one}}});
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, Errc::kUnavailable);
}

TEST(PlanExecutor, AnEmptyPlanIsAdmittedWithoutACall) {
  Fixture f;
  FailsKey failing(f.store, "");
  Result<Outcome> out = f.run(failing, Plan{});
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->admitted);
  EXPECT_FALSE(out->top.has_value());
  EXPECT_EQ(failing.calls, 0);
}

TEST(PlanExecutor, ABadRequestIsAnInvalidArgument) {
  Fixture f;
  Result<Outcome> out =
      f.run(Plan{.items = {{.key = "same", .limit = &f.one}, {.key = "same", .limit = &f.one}}});
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, Errc::kInvalidArgument);
}

// A policy whose one layer is a shadow one: a reservation asked of it reserves nothing, so it
// gets no id (one would name no reservation: settling it could only answer "not found").
TEST(PolicyPlan, AReservationWithoutAnEnforcedLayerHasNoId) {
  PolicySpec spec;
  spec.layers.push_back(LayerSpec{.name = "trial",
                                  .key = {"api_key"},
                                  .mode = LayerMode::kShadow,
                                  .limit = RateSpec{.limit = 5, .period = 60 * kMicrosPerSecond}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  Result<PolicyDecision> d =
      (*policy)->reserve(store, {{"api_key", "k"}}, 1, std::chrono::milliseconds(60'000));
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->reservation.empty());
  EXPECT_EQ(d->layers.size(), 1u) << "the shadow layer is still checked";
}

// A shadow layer is always exact: its `sync: lease` is not passed to the store; the enforced
// layer's is.
TEST(PolicyPlan, AShadowLayerIsNeverDecidedFromALease) {
  PolicySpec spec;
  const RateSpec rate{.limit = 100, .period = 60 * kMicrosPerSecond};
  spec.layers.push_back(
      LayerSpec{.name = "paid", .key = {"api_key"}, .lease = LeaseSpec{}, .limit = rate});
  spec.layers.push_back(LayerSpec{.name = "trial",
                                  .key = {"api_key"},
                                  .mode = LayerMode::kShadow,
                                  .lease = LeaseSpec{},
                                  .limit = rate});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  auto checks = (*policy)->resolve({{"api_key", "k"}});
  ASSERT_TRUE(checks.has_value()) << checks.error().message;
  const Plan plan = policy_plan(**policy, *checks, 1, std::nullopt);
  ASSERT_EQ(plan.items.size(), 2u);
  EXPECT_NE(plan.items[0].lease, nullptr);
  EXPECT_EQ(plan.items[1].role, Role::kShadow);
  EXPECT_EQ(plan.items[1].lease, nullptr);
}

// The one top-decision rule, on hand-made outcomes.
TEST(TopItem, TheLongestWaitAmongDenialsElseTheFewestRemaining) {
  Limit l = per_minute(10);
  const Plan plan{
      .items = {{.limit = &l}, {.limit = &l}, {.limit = &l, .role = Role::kShadow}, {.limit = &l}}};
  const auto outcome = [](std::vector<std::optional<Decision>> ds) {
    std::vector<ItemOutcome> items;
    for (auto& d : ds) items.push_back({.decision = d});
    return items;
  };
  const Decision admit3{.allowed = true, .remaining = 3};
  const Decision admit1{.allowed = true, .remaining = 1};
  const Decision deny5s{.allowed = false, .remaining = 4, .retry_after = 5'000'000};
  const Decision deny9s{.allowed = false, .remaining = 0, .retry_after = 9'000'000};
  const Decision never{.allowed = false, .retry_after = kNever};
  EXPECT_EQ(top_item(plan, outcome({admit3, admit1, admit1, admit3})), 1u);
  EXPECT_EQ(top_item(plan, outcome({admit3, admit3, admit1, admit3})), 0u)
      << "a shadow item never reports; the first wins a tie";
  EXPECT_EQ(top_item(plan, outcome({admit1, deny5s, std::nullopt, deny9s})), 3u)
      << "the longest wait, not the fewest remaining";
  EXPECT_EQ(top_item(plan, outcome({never, deny5s, deny9s, deny9s})), 0u) << "never is longest";
  EXPECT_EQ(top_item(plan, outcome({std::nullopt, std::nullopt, admit1, std::nullopt})),
            std::nullopt);
}

}  // namespace
}  // namespace spillway::policy
