// The policy engine on the seed policy (docs/SPEC.md §4-§5): layers, plans, endpoints,
// all-or-nothing on both backends, keys that cannot collide, and which layer the top-level answer
// describes.
#include "spillway/policy_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "src/policy/keys.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway::policy {
namespace {

std::shared_ptr<const Policy> seed(std::map<std::string, std::string> plans = {}) {
  PolicySpec spec = seed_policy_spec();
  spec.layers[1].by_plan->assignments = std::move(plans);
  auto policy = Policy::make(spec);
  EXPECT_TRUE(policy.has_value()) << (policy ? "" : policy.error().message);
  return *policy;
}

Attributes request(const std::string& ip, const std::string& key, const std::string& endpoint) {
  return {{"ip", ip}, {"api_key", key}, {"endpoint", endpoint}};
}

class PolicyOnBackend : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> make() {
    if (GetParam() == "memory") return std::make_unique<MemoryStore>();
    static std::atomic<int> counter{0};
    const std::string prefix = "policy" + std::to_string(counter++);
    if (GetParam() == "cluster") {
      return std::move(
          *RedisStore::open({.url = testing::shared_cluster().url(), .key_prefix = prefix}));
    }
    static testing::RedisServer* server = new testing::RedisServer();
    return std::move(*RedisStore::open({.url = server->url(), .key_prefix = prefix}));
  }
};

TEST_P(PolicyOnBackend, EndpointDenialChargesNeitherGatewayNorEdge) {
  auto store = make();
  auto policy = seed();
  const Micros now = 5'000'000;
  for (int i = 0; i < 10; ++i) {
    auto d = policy->decide(*store, request("203.0.113.7", "k1", "/search"), 1, now);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    ASSERT_TRUE(d->allowed) << i;
  }
  auto denied = policy->decide(*store, request("203.0.113.7", "k1", "/search"), 1, now);
  ASSERT_TRUE(denied.has_value());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->denied_by, "endpoint");
  ASSERT_EQ(denied->layers.size(), 3u);
  // Edge 1000/min and gateway (free, 60/min) were charged for the 10 admitted requests only.
  EXPECT_EQ(denied->layers[0].decision.remaining, 990);
  EXPECT_EQ(denied->layers[1].decision.remaining, 50);
  for (int i = 0; i < 20; ++i) {
    ASSERT_FALSE(policy->decide(*store, request("203.0.113.7", "k1", "/search"), 1, now)->allowed);
  }
  auto other = policy->decide(*store, request("203.0.113.7", "k1", "/profile"), 1, now);
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(other->allowed);
  ASSERT_EQ(other->layers.size(), 2u) << "an unlisted endpoint passes the endpoint layer";
  EXPECT_EQ(other->layers[0].decision.remaining, 989);
  EXPECT_EQ(other->layers[1].decision.remaining, 49);
}

TEST_P(PolicyOnBackend, PlansChooseTheGatewayLimit) {
  auto store = make();
  auto policy = seed({{"paid", "pro"}});
  int free_admitted = 0, pro_admitted = 0;
  for (int i = 0; i < 700; ++i) {
    free_admitted += policy->decide(*store, request("198.51.100.1", "anon", "/x"), 1, 0)->allowed;
    pro_admitted += policy->decide(*store, request("198.51.100.2", "paid", "/x"), 1, 0)->allowed;
  }
  EXPECT_EQ(free_admitted, 60);
  EXPECT_EQ(pro_admitted, 600);
  // Each layer's answer names the plan it applied; only the by_plan layer has one.
  for (const auto& [key, plan] : {std::pair{"anon", "free"}, std::pair{"paid", "pro"}}) {
    auto decided = policy->decide(*store, request("198.51.100.3", key, "/x"), 0, 0);
    ASSERT_TRUE(decided.has_value()) << decided.error().message;
    ASSERT_EQ(decided->layers.size(), 2u);  // edge, gateway ("/x" is not a listed endpoint)
    EXPECT_EQ(decided->layers[0].plan, "");
    EXPECT_EQ(decided->layers[1].name, "gateway");
    EXPECT_EQ(decided->layers[1].plan, plan) << key;
  }
}

// A shadow layer beside an enforced one: 10 per minute enforced by ip, 15 per minute in shadow
// by (ip, api_key) and 3 per minute in a second shadow layer by api_key. Of 20 requests in one
// instant the enforced layer admits exactly 10 and denies 10; the shadow layers never deny, are
// checked on the 10 admitted ones only, each on its own (as if it alone were enforced): the
// 15-per-minute layer is charged 10 times (5 remain: a charge on a denied request would leave
// fewer) and the 3-per-minute one would deny 7. Through the synchronous and the asynchronous
// (server) paths alike.
TEST_P(PolicyOnBackend, ShadowLayersNeverDenyAndEachCountsItsOwnWouldBeDenials) {
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = RateSpec{10, kMicrosPerMinute}});
  spec.layers.push_back({.name = "wide",
                         .key = {"ip", "api_key"},
                         .mode = LayerMode::kShadow,
                         .limit = RateSpec{15, kMicrosPerMinute}});
  spec.layers.push_back({.name = "trial",
                         .key = {"api_key"},
                         .mode = LayerMode::kShadow,
                         .limit = RateSpec{3, kMicrosPerMinute}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy) << policy.error().message;
  const Attributes attributes = {{"ip", "10.0.0.1"}, {"api_key", "k"}};
  for (const bool async : {false, true}) {
    auto store = make();
    const Micros now = 7'000'000;
    int admitted = 0, shadow_checked = 0;
    std::map<std::string, int> would_deny;
    for (int i = 0; i < 20; ++i) {
      Result<PolicyDecision> d;
      if (async) {
        std::promise<Result<PolicyDecision>> promise;
        (*policy)->decide_async(*store, attributes, 1, std::nullopt,
                                [&](Result<PolicyDecision> r) { promise.set_value(std::move(r)); });
        d = promise.get_future().get();
      } else {
        d = (*policy)->decide(*store, attributes, 1, now);
      }
      ASSERT_TRUE(d) << d.error().message;
      EXPECT_EQ(d->denied_by.value_or("edge"), "edge");
      EXPECT_FALSE(d->shadow_error);
      if (d->allowed) {
        ++admitted;
        ASSERT_TRUE(d->shadow_checked);
        ASSERT_EQ(d->layers.size(), 3u);
        EXPECT_TRUE(d->layers[1].shadow && d->layers[2].shadow);
        EXPECT_EQ(d->layers[1].name, "wide");
        ++shadow_checked;
        for (const std::string& name : d->shadow_denied) ++would_deny[name];
      } else {
        EXPECT_FALSE(d->shadow_checked) << "a denied request checks no shadow layer";
        EXPECT_EQ(d->layers.size(), 1u);
      }
    }
    const char* path = async ? "async" : "sync";
    EXPECT_EQ(admitted, 10) << path;
    EXPECT_EQ(shadow_checked, 10) << path;
    // The async path reads the wall clock: its 20 requests take far less than the 20 s in which
    // the 3-per-minute limit would grant one more.
    EXPECT_EQ(would_deny["trial"], 7) << path;
    EXPECT_EQ(would_deny["wide"], 0) << path;
    const std::vector<Policy::Check> checks = *(*policy)->resolve(attributes);
    const std::optional<Micros> at = async ? std::nullopt : std::optional(now);
    Result<Decision> wide = store->check(checks[1].key, *checks[1].limit, 0, at);
    ASSERT_TRUE(wide);
    EXPECT_EQ(wide->remaining, 5) << path << ": charged once per admitted request, never more";
    Result<Decision> trial = store->check(checks[2].key, *checks[2].limit, 0, at);
    ASSERT_TRUE(trial);
    EXPECT_EQ(trial->remaining, 0) << path;
  }
}

// A policy of shadow layers only denies nothing, and still reports what it would deny.
TEST_P(PolicyOnBackend, OnlyShadowLayersAdmitEverything) {
  PolicySpec spec;
  spec.layers.push_back({.name = "trial",
                         .key = {"ip"},
                         .algorithm = Algorithm::kFixedWindow,
                         .mode = LayerMode::kShadow,
                         .limit = RateSpec{4, kMicrosPerMinute}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy);
  auto store = make();
  int would_deny = 0;
  for (int i = 0; i < 12; ++i) {
    Result<PolicyDecision> d = (*policy)->decide(*store, {{"ip", "10.0.0.2"}}, 1, 61'000'000);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->allowed);
    EXPECT_FALSE(d->denied_by);
    would_deny += static_cast<int>(d->shadow_denied.size());
  }
  EXPECT_EQ(would_deny, 8);
}

INSTANTIATE_TEST_SUITE_P(Backends, PolicyOnBackend,
                         ::testing::Values("memory", "redis", "cluster"));

TEST(Policy, AttributeValuesCannotImitateAnotherKey) {
  PolicySpec spec;
  spec.layers.push_back({.name = "pair",
                         .key = {"api_key", "tenant"},
                         .limit = RateSpec{.limit = 1, .period = kMicrosPerMinute}});
  auto pair = *Policy::make(spec);
  // ("endpoint" is a path, made canonical: an opaque attribute shows the length prefixes.)
  auto one = pair->resolve({{"api_key", "a:b"}, {"tenant", "c"}});
  auto other = pair->resolve({{"api_key", "a"}, {"tenant", "b:c"}});
  ASSERT_TRUE(one.has_value() && other.has_value());
  EXPECT_NE(one->at(0).key, other->at(0).key);
}

TEST(Policy, MissingAttributesAreNamed) {
  auto policy = seed();
  auto missing = policy->resolve({{"ip", "192.0.2.1"}, {"endpoint", "/search"}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("api_key"), std::string::npos);
  auto empty = policy->resolve(request("", "k", "/search"));
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("\"ip\""), std::string::npos);
}

TEST(Policy, AMissingAttributeIsTheErrorsFieldNotJustTextInItsMessage) {
  // The server answers /v1/auth 401 when the API key is missing; it decides by the field, so a
  // value that merely mentions "api_key" in some other error is not mistaken for it.
  auto policy = seed();
  auto missing = policy->resolve({{"ip", "192.0.2.1"}, {"endpoint", "/search"}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(missing.error().field, "api_key");
  auto no_ip = policy->resolve(request("", "k", "/search"));
  ASSERT_FALSE(no_ip.has_value());
  EXPECT_EQ(no_ip.error().field, "ip");

  PolicySpec spec;
  spec.layers.push_back({.name = "api_key",
                         .key = {"tenant"},
                         .limit = RateSpec{.limit = 1, .period = kMicrosPerMinute}});
  auto by_tenant = *Policy::make(spec);
  auto no_tenant = by_tenant->resolve({{"api_key", "k"}});
  ASSERT_FALSE(no_tenant.has_value());
  EXPECT_EQ(no_tenant.error().field, "tenant") << no_tenant.error().message;
}

TEST(Policy, LayerKeysAndLimitEndpointKeysNeverMeet) {
  // A layer's key starts with its name (letters, digits, '_', '-'); /v1/limit's with '/'.
  PolicySpec spec;
  spec.layers.push_back(
      {.name = "v1", .key = {"limit"}, .limit = RateSpec{.limit = 1, .period = kMicrosPerMinute}});
  auto policy = *Policy::make(spec);
  auto layer_key = policy->resolve({{"limit", "x"}});
  ASSERT_TRUE(layer_key.has_value());
  auto limit_key = limit_endpoint_key("x");
  ASSERT_TRUE(limit_key.has_value());
  EXPECT_EQ(*limit_key, "/v1/limit:x");
  EXPECT_EQ(layer_key->at(0).key, "v1:1:x");
  EXPECT_EQ(limit_endpoint_key(std::string(kMaxLimitEndpointKeyBytes, 'k'))->size(), kMaxKeyBytes);
  auto too_long = limit_endpoint_key(std::string(kMaxLimitEndpointKeyBytes + 1, 'k'));
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().field, "key");
}

TEST(Policy, TopLevelIsTheLongestDenialOrTheFewestRemaining) {
  MemoryStore store;
  PolicySpec spec;
  spec.layers.push_back(
      {.name = "wide", .key = {"ip"}, .limit = RateSpec{.limit = 5, .period = kMicrosPerMinute}});
  spec.layers.push_back(
      {.name = "narrow", .key = {"ip"}, .limit = RateSpec{.limit = 2, .period = kMicrosPerSecond}});
  auto policy = *Policy::make(spec);
  auto first = policy->decide(store, {{"ip", "x"}}, 1, 0);
  EXPECT_EQ(first->top.remaining, 1) << "admitted: the layer with the fewest remaining";
  EXPECT_EQ(first->top_period, kMicrosPerSecond);
  (void)policy->decide(store, {{"ip", "x"}}, 1, 0);
  auto denied = policy->decide(store, {{"ip", "x"}}, 1, 0);
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->denied_by, "narrow");
  // Make both deny: cost 5 fits neither now; wide waits longer (a minute's refill).
  auto both = policy->decide(store, {{"ip", "x"}}, 2, 0);
  EXPECT_FALSE(both->allowed);
  EXPECT_EQ(both->denied_by, "narrow");
  auto never = policy->decide(store, {{"ip", "x"}}, 3, 0);
  EXPECT_EQ(never->denied_by, "narrow") << "cost 3 > 2 can never pass narrow: the longest wait";
  EXPECT_EQ(never->top.retry_after, kNever);
}

// A shadow layer never turns a request away: when its attribute is missing, or its key would be
// too long, it does not apply (an enforced layer would answer 400).
TEST(Policy, AShadowLayerWithoutItsAttributesDoesNotApply) {
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = RateSpec{10, kMicrosPerMinute}});
  spec.layers.push_back({.name = "trial",
                         .key = {"api_key"},
                         .mode = LayerMode::kShadow,
                         .limit = RateSpec{1, kMicrosPerMinute}});
  spec.layers.push_back({.name = "plans",
                         .key = {"ip"},
                         .mode = LayerMode::kShadow,
                         .by_plan = PlanSelector{.attribute = "tier",
                                                 .plans = {{"free", RateSpec{1, kMicrosPerMinute}}},
                                                 .default_plan = "free"}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy) << policy.error().message;
  MemoryStore store;
  for (const Attributes& attributes :
       {Attributes{{"ip", "10.0.0.3"}}, Attributes{{"ip", "10.0.0.3"}, {"api_key", ""}},
        Attributes{{"ip", "10.0.0.3"}, {"api_key", std::string(2000, 'k')}}}) {
    Result<PolicyDecision> d = (*policy)->decide(store, attributes, 1, 1'000'000);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->allowed);
    EXPECT_EQ(d->layers.size(), 1u) << "only the enforced layer applied";
  }
  // The same layers enforced: the missing attribute is an error again.
  spec.layers[1].mode = LayerMode::kEnforce;
  Result<PolicyDecision> enforced = (*Policy::make(spec))->decide(store, {{"ip", "10.0.0.3"}}, 1);
  ASSERT_FALSE(enforced);
  EXPECT_NE(enforced.error().message.find("api_key"), std::string::npos);
}

// A backend error in a shadow layer's check changes nothing in the answer: it is reported in
// shadow_error, the layer left out. Fault injection on the in-process store: checks of keys of
// the layer "trial" fail.
class FailingShadowStore : public Store {
 public:
  void decide(const StoreRequest& request, AllCallback done) override {
    for (const KeyedLimit& check : request.checks()) {
      if (check.key.starts_with("trial")) {
        return done(std::unexpected(Error{Errc::kTimeout, "injected"}));
      }
    }
    memory_.decide(request, std::move(done));
  }

 private:
  MemoryStore memory_;
};

TEST(Policy, AShadowLayersBackendErrorChangesNothingButIsReported) {
  PolicySpec spec;
  spec.layers.push_back({.name = "edge", .key = {"ip"}, .limit = RateSpec{2, kMicrosPerMinute}});
  spec.layers.push_back({.name = "trial",
                         .key = {"ip"},
                         .mode = LayerMode::kShadow,
                         .limit = RateSpec{1, kMicrosPerMinute}});
  auto policy = Policy::make(spec);
  ASSERT_TRUE(policy);
  FailingShadowStore store;
  for (const bool async : {false, true}) {
    Result<PolicyDecision> d;
    if (async) {
      (*policy)->decide_async(store, {{"ip", "10.0.0.4"}}, 1, std::nullopt,
                              [&](Result<PolicyDecision> r) { d = std::move(r); });
    } else {
      d = (*policy)->decide(store, {{"ip", "10.0.0.4"}}, 1);
    }
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->allowed);
    ASSERT_TRUE(d->shadow_error);
    EXPECT_EQ(d->shadow_error->code, Errc::kTimeout);
    EXPECT_EQ(d->layers.size(), 1u);
    EXPECT_TRUE(d->shadow_denied.empty());
  }
}

TEST(Policy, MakeRejectsInvalidSpecsNamingTheLayer) {
  const RateSpec rate{.limit = 1, .period = kMicrosPerSecond};
  struct Case {
    PolicySpec spec;
    const char* mentions;
  };
  std::vector<Case> cases;
  cases.push_back({PolicySpec{}, "at least one layer"});
  cases.push_back({PolicySpec{.layers = {{.name = "a", .key = {"ip"}, .limit = rate},
                                         {.name = "a", .key = {"ip"}, .limit = rate}}},
                   "unique"});
  cases.push_back({PolicySpec{.layers = {{.name = "a", .key = {"ip"}}}}, "exactly one"});
  cases.push_back(
      {PolicySpec{.layers = {{.name = "a:7:1:b", .key = {"ip"}, .limit = rate}}}, "\"a:7:1:b\""});
  cases.push_back(
      {PolicySpec{.layers = {{.name = "edge\r\nX-Evil: 1", .key = {"ip"}, .limit = rate}}},
       "letters, digits"});
  cases.push_back({PolicySpec{.layers = {{.name = "a", .key = {}, .limit = rate}}}, "no key"});
  cases.push_back({PolicySpec{.layers = {{.name = "a",
                                          .key = {"ip"},
                                          .algorithm = Algorithm::kFixedWindow,
                                          .limit = RateSpec{.limit = 1, .period = 1, .burst = 2}}}},
                   "burst"});
  cases.push_back({PolicySpec{.layers = {{.name = "g",
                                          .key = {"api_key"},
                                          .by_plan = PlanSelector{.plans = {{"free", rate}},
                                                                  .default_plan = "gold"}}}},
                   "gold"});
  for (const Case& c : cases) {
    auto made = Policy::make(c.spec);
    ASSERT_FALSE(made.has_value()) << c.mentions;
    EXPECT_NE(made.error().message.find(c.mentions), std::string::npos) << made.error().message;
  }
}

}  // namespace
}  // namespace spillway::policy
