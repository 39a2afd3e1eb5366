// Tenant records on Envoy's paths (src/rls/tenant_gate.h, docs/SPEC.md §9.8): with the tenant
// descriptor key configured, a caller blocked through the admin API is OVER_LIMIT on
// ShouldRateLimit and DENY_ALL on RLQS, nothing charged, whatever spelling of it the descriptor
// carries; other callers are decided by the rules as before. On the in-process store and tenant
// directory.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/open_store.h"
#include "spillway/policy_engine.h"
#include "src/rls/quota_engine.h"
#include "src/rls/rls_engine.h"

namespace spillway::rls {
namespace {

constexpr std::string_view kGateRules = R"(domain: gate
descriptors:
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 60}
  - key: client_ip
    rate_limit: {unit: minute, requests_per_unit: 60}
)";

// A policy whose records are keyed by api_key or by ip (their spellings differ only for ip).
policy::PolicySpec gate_policy_spec(const std::string& attribute) {
  policy::LayerSpec layer;
  layer.name = "gateway";
  layer.key = {attribute};
  layer.by_plan =
      policy::PlanSelector{.attribute = attribute,
                           .plans = {{"free", {.limit = 60, .period = kMicrosPerMinute}}},
                           .default_plan = "free",
                           .assignments = {},
                           .source = policy::PlanSource::kStore};
  return policy::PolicySpec{.layers = {layer}};
}

struct GateFixture {
  explicit GateFixture(const std::string& attribute, std::string descriptor_key)
      : tenants(std::shared_ptr<TenantDirectory>(*open_tenants("memory", {}))),
        policy(*policy::Policy::make(gate_policy_spec(attribute), tenants)),
        rules(std::make_shared<RlsRules>()),
        gate{.tenants = tenants,
             .descriptor_key = std::move(descriptor_key),
             .spell = [this](std::string_view value) { return policy->tenant_key(value, 64); }},
        engine(store, rules, RlsOptions{.tenants = gate}) {
    Result<DomainRules> domain = parse_rls_yaml(kGateRules, "gate.yaml");
    EXPECT_TRUE(domain.has_value()) << domain.error().message;
    rules->domains.emplace("gate", *domain);
    engine.set_rules(rules);
  }

  void block(const std::string& key) {
    auto spelt = policy->tenant_key(key, 64);
    ASSERT_TRUE(spelt.has_value()) << spelt.error().message;
    TenantRecord record;
    record.blocked = true;
    ASSERT_TRUE(tenants->put(*spelt, record).has_value());
  }

  RlsResponse ask(const std::string& key, const std::string& value, std::uint64_t hits = 1) {
    std::optional<Result<RlsResponse>> out;
    engine.should_rate_limit({.domain = "gate",
                              .descriptors = {RlsDescriptor{
                                  .entries = {{key, value}}, .limit = {}, .hits_addend = hits}}},
                             [&](Result<RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out.has_value() && out->has_value());
    return out && *out ? **out : RlsResponse{};
  }

  MemoryStore store;
  std::shared_ptr<TenantDirectory> tenants;
  std::shared_ptr<const policy::Policy> policy;
  std::shared_ptr<RlsRules> rules;
  TenantGate gate;
  RlsEngine engine;
};

TEST(RlsTenantGate, ABlockedCallerIsOverTheLimitAndChargedNothing) {
  GateFixture f("api_key", "api_key");
  f.block("gate-blocked-1");
  const RlsResponse denied = f.ask("api_key", "gate-blocked-1");
  EXPECT_EQ(denied.overall_code, Code::kOverLimit);
  ASSERT_EQ(denied.statuses.size(), 1u);
  EXPECT_EQ(denied.statuses[0].code, Code::kOverLimit);
  // Another caller: the rule decides, as before.
  const RlsResponse other = f.ask("api_key", "gate-other-1");
  EXPECT_EQ(other.overall_code, Code::kOk);
  EXPECT_EQ(other.statuses[0].limit_remaining, 59u);
  // Unblocked: its whole budget is there (the denial charged nothing).
  ASSERT_TRUE(f.tenants->erase("gate-blocked-1").has_value());
  const RlsResponse after = f.ask("api_key", "gate-blocked-1", 0);
  EXPECT_EQ(after.overall_code, Code::kOk);
  EXPECT_EQ(after.statuses[0].limit_remaining, 60u);
}

TEST(RlsTenantGate, EverySpellingOfABlockedAddressIsBlocked) {
  GateFixture f("ip", "client_ip");
  f.block("2001:db8:7:8::1");
  for (const std::string spelling :
       {"2001:db8:7:8::1", "2001:DB8:7:8:0:0:0:99", "2001:db8:7:8::/64"}) {
    EXPECT_EQ(f.ask("client_ip", spelling).overall_code, Code::kOverLimit) << spelling;
  }
  f.block("::ffff:192.0.2.44");
  EXPECT_EQ(f.ask("client_ip", "192.0.2.44").overall_code, Code::kOverLimit);
  EXPECT_EQ(f.ask("client_ip", "2001:db8:7:9::1").overall_code, Code::kOk);  // another /64
  EXPECT_EQ(f.ask("client_ip", "not-an-address").overall_code, Code::kOk);   // names no caller
  // Only the configured descriptor key carries a caller.
  EXPECT_EQ(f.ask("api_key", "192.0.2.44").overall_code, Code::kOk);
}

TEST(RlsTenantGate, AQuotaBucketOfABlockedCallerIsDenyAll) {
  GateFixture f("api_key", "api_key");
  f.block("gate-quota-blocked");
  QuotaService service(
      f.store, [&f] { return std::shared_ptr<const RlsRules>(f.rules); },
      policy::RlsOnError::kError, nullptr, f.gate);
  QuotaStream stream(service);
  std::optional<Result<std::vector<QuotaAssignment>>> out;
  stream.report("gate",
                {QuotaUsage{.bucket = {{"api_key", "gate-quota-blocked"}},
                            .elapsed = kMicrosPerSecond,
                            .allowed = 5,
                            .denied = 0},
                 QuotaUsage{.bucket = {{"api_key", "gate-quota-other"}},
                            .elapsed = kMicrosPerSecond,
                            .allowed = 5,
                            .denied = 0}},
                [&](Result<std::vector<QuotaAssignment>> answered) { out = std::move(answered); });
  ASSERT_TRUE(out.has_value() && out->has_value());
  ASSERT_EQ((*out)->size(), 2u);
  EXPECT_EQ((**out)[0].strategy, QuotaStrategy::kDenyAll);
  EXPECT_EQ((**out)[1].strategy, QuotaStrategy::kTokenBucket);
  // Nothing charged to the blocked caller's shared key.
  EXPECT_EQ(f.ask("api_key", "gate-quota-blocked", 0).overall_code, Code::kOverLimit);
  ASSERT_TRUE(f.tenants->erase("gate-quota-blocked").has_value());
  EXPECT_EQ(f.ask("api_key", "gate-quota-blocked", 0).statuses[0].limit_remaining, 60u);
}

}  // namespace
}  // namespace spillway::rls
