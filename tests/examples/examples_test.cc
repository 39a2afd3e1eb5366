// The configuration examples of examples/config/ work as written: every *.yaml there loads with
// the config loader and `spillway validate` (run from the repository root, as the files' comments
// say), and answers one real request on the store it names — memory as it is, redis:// on a
// test Redis and redis+cluster:// on a test Redis Cluster (their URLs replace the file's). The
// envoyproxy/ratelimit rules of examples/config/ratelimit/ load and answer through RlsEngine.
// What each example promises in its comment (the seed policy, each key's plan, the routes, the
// shadow layer, the rules' limits) is checked too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/open_store.h"
#include "spillway/policy_engine.h"
#include "src/config/config.h"
#include "src/rls/rls_config.h"
#include "src/rls/rls_engine.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = SPILLWAY_SOURCE_DIR;
const fs::path kConfigs = kSource / "examples/config";

// Every spillway config under examples/config (not the rules in its subdirectories), sorted.
std::vector<fs::path> config_examples() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kConfigs)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

policy::Config load(const std::string& name) {
  Result<policy::Config> config = policy::load_config_file((kConfigs / name).string());
  EXPECT_TRUE(config.has_value()) << name << ": " << config.error().message;
  return config ? *config : policy::Config{};
}

// A concrete path for a route as written: "GET /orders/{id}/export" -> "/orders/42/export",
// "/files/**" -> "/files/a/b"; and the route's method ("GET" when it names none).
std::pair<std::string, std::string> request_for_route(const std::string& route) {
  std::string method = "GET", path = route;
  if (const std::size_t space = route.find(' '); space != std::string::npos) {
    method = route.substr(0, space);
    path = route.substr(space + 1);
  }
  std::string out;
  std::size_t at = 0;
  while (at < path.size()) {
    const std::size_t slash = path.find('/', at + 1);
    const std::string segment =
        path.substr(at, slash == std::string::npos ? path.npos : slash - at);
    if (segment.starts_with("/{")) {
      out += "/42";
    } else if (segment == "/**") {
      out += "/a/b";
    } else {
      out += segment;
    }
    at = slash == std::string::npos ? path.size() : slash;
  }
  return {out, method};
}

// A /v1/check body with a value for every attribute the policy reads, chosen so that every
// layer applies: the endpoint is a concrete path of the first route of the first endpoint layer.
std::string check_body(const policy::Policy& policy) {
  std::string path = "/", method = "GET";
  for (const policy::LayerSpec& layer : policy.spec().layers) {
    if (layer.by_endpoint && !layer.by_endpoint->limits.empty()) {
      std::tie(path, method) = request_for_route(layer.by_endpoint->limits.begin()->first);
      break;
    }
  }
  std::string body = "{";
  for (const std::string& attribute : policy.attributes_used()) {
    std::string value = "examples-test";
    if (attribute == "ip") value = "203.0.113.7";
    if (attribute == policy::kMethodAttribute) value = method;
    if (const auto& priority = policy.spec().priority;
        priority && attribute == priority->attribute) {
      value = priority->default_level;
    }
    const auto& costs = policy.cost_attributes();
    if (std::find(costs.begin(), costs.end(), attribute) != costs.end()) value = "1";
    const auto& routes = policy.route_attributes();
    if (std::find(routes.begin(), routes.end(), attribute) != routes.end()) value = path;
    if (body.size() > 1) body += ",";
    body += "\"" + attribute + "\":\"" + value + "\"";
  }
  return body + "}";
}

// The store an example names, on this test's servers. Nothing is opened for an unknown scheme
// (the test fails).
std::unique_ptr<Store> store_for(const policy::Config& config,
                                 std::optional<testing::RedisServer>& redis) {
  const std::string& url = config.backend.url;
  std::string test_url;
  if (url == "memory" || url == "memory://") {
    test_url = "memory";
  } else if (url.starts_with("redis+cluster://")) {
    test_url = testing::shared_cluster().url();
  } else if (url.starts_with("redis://")) {
    if (!redis) redis.emplace();
    test_url = redis->url();
  } else {
    ADD_FAILURE() << "no test server for the example's backend " << url;
    return nullptr;
  }
  BackendOptions options;
  options.redis.key_prefix = "examples-test-" + std::to_string(getpid());
  options.redis.timeout = std::chrono::milliseconds(2000);  // generous under sanitizers
  Result<std::unique_ptr<Store>> store = open_store(test_url, options);
  EXPECT_TRUE(store.has_value()) << test_url << ": " << store.error().message;
  if (!store) return nullptr;
  EXPECT_TRUE(testing::wait_until([&] { return (*store)->ready(); }))
      << test_url << " not ready within 5 s";
  return std::move(*store);
}

TEST(ConfigExamples, TheExpectedFilesAreThere) {
  std::vector<std::string> names;
  for (const fs::path& file : config_examples()) names.push_back(file.filename().string());
  EXPECT_EQ(names,
            (std::vector<std::string>{"api-four-kinds.yaml", "envoy-rls.yaml", "llm-tokens.yaml",
                                      "redis-cluster.yaml", "saas-plans.yaml", "seed-redis.yaml"}));
}

TEST(ConfigExamples, EveryFileLoadsAndAnswersOneRequestOnTheStoreItNames) {
  const std::vector<fs::path> files = config_examples();
  ASSERT_FALSE(files.empty());
  std::optional<testing::RedisServer> redis;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    Result<policy::Config> config = policy::load_config_file(file.string());
    ASSERT_TRUE(config.has_value()) << config.error().message;
    Result<std::shared_ptr<const policy::Policy>> policy = policy::Policy::make(config->policy);
    ASSERT_TRUE(policy.has_value()) << policy.error().message;
    std::unique_ptr<Store> store = store_for(*config, redis);
    ASSERT_NE(store, nullptr);

    testing::RunningService running = testing::start_service(*config, std::move(store));
    ASSERT_NE(running.port(), 0);
    const std::string body = check_body(**policy);
    const testing::HttpReply reply = testing::http(running.port(), "POST", "/v1/check", body);
    EXPECT_EQ(reply.status, 200) << body << " -> " << reply.body;
    EXPECT_NE(reply.body.find("\"allowed\":true"), std::string::npos) << reply.body;
    EXPECT_EQ(reply.body.find("backend_error"), std::string::npos) << "decided, not failed open";
    for (const policy::LayerSpec& layer : config->policy.layers) {
      EXPECT_NE(reply.body.find("\"name\":\"" + layer.name + "\""), std::string::npos)
          << "layer " << layer.name << " applied: " << body << " -> " << reply.body;
    }
  }
}

TEST(ConfigExamples, ValidateAcceptsEachFromTheRepositoryRoot) {
  for (const fs::path& file : config_examples()) {
    const std::string relative = fs::relative(file, kSource).string();
    const testing::CommandResult run = testing::run_command(
        "cd '" + kSource.string() + "' && '" SPILLWAY_BINARY "' validate '" + relative + "' 2>&1");
    EXPECT_EQ(run.status, 0) << relative << ": " << run.out;
    EXPECT_NE(run.out.find(": ok"), std::string::npos) << run.out;
  }
}

TEST(ConfigExamples, SeedRedisIsTheBuiltInSeedPolicyOnRedis) {
  const policy::Config config = load("seed-redis.yaml");
  EXPECT_EQ(config.backend.url, "redis://127.0.0.1:6379/0");
  EXPECT_EQ(config.policy, policy::seed_policy_spec());
}

// api-four-kinds.yaml as its comment and the README's "Four kinds of limit" say: 20 in flight per
// key, released by the ticket; 100 a minute of which normal requests fill 80 (then they are shed,
// and critical ones still pass); a request that fits after at most 500 ms is admitted with its
// delay.
TEST(ConfigExamples, ApiFourKindsAnswersAsTheReadmeSays) {
  const policy::Config config = load("api-four-kinds.yaml");
  auto policy = policy::Policy::make(config.policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  constexpr Micros kFourKindsStart = 1'000 * kMicrosPerHour;
  const auto ask = [&](const std::string& key, const std::string& priority, Micros at) {
    policy::Attributes attributes{{"api_key", key}};
    if (!priority.empty()) attributes["priority"] = priority;
    Result<policy::PolicyDecision> d = (*policy)->decide(store, attributes, 1, at);
    EXPECT_TRUE(d.has_value()) << d.error().message;
    return d ? *d : policy::PolicyDecision{.allowed = false};
  };
  const auto release = [&](const policy::PolicyDecision& d, Micros at) {
    Result<Settled> released = store.settle_and_wait({.id = d.reservation, .now = at});
    EXPECT_TRUE(released.has_value()) << released.error().message;
  };

  // 20 in flight: the 21st is denied by in_flight (a plain limit, not shed) and charges nothing.
  std::vector<policy::PolicyDecision> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(ask("k1", "", kFourKindsStart));
    ASSERT_TRUE(held.back().allowed) << i;
    ASSERT_FALSE(held.back().reservation.empty()) << "an admitted request has a ticket";
    EXPECT_EQ(held.back().hold_expires, 30 * kMicrosPerSecond);
  }
  const policy::PolicyDecision full = ask("k1", "", kFourKindsStart);
  EXPECT_FALSE(full.allowed);
  EXPECT_EQ(full.denied_by, "in_flight");
  EXPECT_FALSE(full.shed);
  for (const auto& d : held) release(d, kFourKindsStart);

  // Normal requests fill 80 of the 100; the 81st is shed, a critical one still passes.
  int admitted = 20;
  while (admitted < 80) {
    const policy::PolicyDecision d = ask("k1", "", kFourKindsStart);
    ASSERT_TRUE(d.allowed) << admitted;
    release(d, kFourKindsStart);
    ++admitted;
  }
  const policy::PolicyDecision shed = ask("k1", "normal", kFourKindsStart);
  EXPECT_FALSE(shed.allowed);
  EXPECT_EQ(shed.denied_by, "per_key");
  EXPECT_TRUE(shed.shed);
  const policy::PolicyDecision critical = ask("k1", "critical", kFourKindsStart);
  EXPECT_TRUE(critical.allowed);
  EXPECT_EQ(critical.delay, 0);
  release(critical, kFourKindsStart);

  // Smoothing: 80 at once, then 400 ms later a normal request fits after 200 ms more (one every
  // 600 ms): admitted with that delay; the next would wait 800 ms, past max_delay: shed.
  for (int i = 0; i < 80; ++i) release(ask("k2", "", kFourKindsStart), kFourKindsStart);
  const policy::PolicyDecision later = ask("k2", "", kFourKindsStart + 400'000);
  EXPECT_TRUE(later.allowed);
  EXPECT_EQ(later.delay, 200'000);
  release(later, kFourKindsStart + 400'000);
  const policy::PolicyDecision too_late = ask("k2", "", kFourKindsStart + 400'000);
  EXPECT_FALSE(too_late.allowed);
  EXPECT_TRUE(too_late.shed);
}

// The README's "Four kinds of limit" shows the example's policy: the same, read from either.
TEST(ConfigExamples, TheReadmeShowsApiFourKindsPolicy) {
  const std::string readme = testing::read_file((kSource / "README.md").string());
  const std::size_t section = readme.find("## Four kinds of limit");
  ASSERT_NE(section, std::string::npos);
  const std::size_t begin = readme.find("```yml\n", section);
  const std::size_t end = readme.find("```", begin + 7);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  Result<policy::Config> shown = policy::parse_config(readme.substr(begin + 7, end - begin - 7));
  ASSERT_TRUE(shown.has_value()) << shown.error().message;
  EXPECT_EQ(shown->policy, load("api-four-kinds.yaml").policy);
}

TEST(ConfigExamples, SaasPlansGivesEachKeyItsPlan) {
  const policy::Config config = load("saas-plans.yaml");
  EXPECT_EQ(config.backend.url, "memory");
  auto policy = policy::Policy::make(config.policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  const auto plan_limit = [&](const std::string& key) -> std::int64_t {
    // "/" is no route: the endpoint layer does not apply.
    auto d = (*policy)->decide(
        store, {{"ip", "198.51.100.1"}, {"api_key", key}, {"endpoint", "/"}, {"method", "GET"}}, 0);
    if (!d) return -1;
    for (const auto& layer : d->layers) {
      if (layer.name == "plan") return layer.decision.limit;
    }
    return -2;
  };
  EXPECT_EQ(plan_limit("demo-free-key"), 60);
  EXPECT_EQ(plan_limit("demo-pro-key"), 600);
  EXPECT_EQ(plan_limit("demo-enterprise-key"), 6000);
  EXPECT_EQ(plan_limit("a-key-in-no-plan"), 60) << "the default plan: free";
}

TEST(ConfigExamples, SaasPlansRoutesShareOneBudgetPerRouteAndMethod) {
  const policy::Config config = load("saas-plans.yaml");
  auto policy = policy::Policy::make(config.policy);
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  MemoryStore store;
  int ip = 0;
  // How many of `n` requests of the pro key are admitted, each from a fresh IP (the edge layer
  // never decides).
  const auto admitted = [&](const std::vector<std::pair<std::string, std::string>>& requests) {
    int count = 0;
    for (const auto& [method, path] : requests) {
      auto d = (*policy)->decide(store,
                                 {{"ip", "192.0.2." + std::to_string(++ip % 250)},
                                  {"api_key", "demo-pro-key"},
                                  {"endpoint", path},
                                  {"method", method}},
                                 1);
      EXPECT_TRUE(d.has_value()) << path << ": " << d.error().message;
      count += d && d->allowed;
    }
    return count;
  };
  // /orders/{id}/export: 5/min for every id together.
  EXPECT_EQ(admitted({{"GET", "/orders/1/export"},
                      {"GET", "/orders/2/export"},
                      {"GET", "/Orders/3/export/"},
                      {"GET", "/orders/4/export?x=1"},
                      {"GET", "/orders/5/export"},
                      {"GET", "/orders/6/export"},
                      {"GET", "/orders/7/export"}}),
            5);
  // /files/**: 3/min for anything under /files.
  EXPECT_EQ(
      admitted(
          {{"GET", "/files/a"}, {"PUT", "/files/b/c"}, {"GET", "/files/d"}, {"GET", "/files/e"}}),
      3);
  // POST /search 5/min and GET /search 10/min are two budgets.
  std::vector<std::pair<std::string, std::string>> posts(7, {"POST", "/search"});
  std::vector<std::pair<std::string, std::string>> gets(12, {"GET", "/search"});
  EXPECT_EQ(admitted(posts), 5);
  EXPECT_EQ(admitted(gets), 10);
}

TEST(ConfigExamples, SaasPlansDailyQuotaIsAShadowLayer) {
  const policy::Config config = load("saas-plans.yaml");
  ASSERT_EQ(config.policy.layers.size(), 4u);
  const policy::LayerSpec& daily = config.policy.layers.back();
  EXPECT_EQ(daily.name, "daily_quota");
  EXPECT_EQ(daily.mode, policy::LayerMode::kShadow);
  for (std::size_t i = 0; i + 1 < config.policy.layers.size(); ++i) {
    EXPECT_EQ(config.policy.layers[i].mode, policy::LayerMode::kEnforce);
  }
}

TEST(ConfigExamples, RedisClusterNamesAClusterUrl) {
  const policy::Config config = load("redis-cluster.yaml");
  EXPECT_TRUE(config.backend.url.starts_with("redis+cluster://127.0.0.1:7000,"))
      << config.backend.url;
}

// Envoy: the config's rls.config is relative to the config file's directory (docs/SPEC.md §7);
// the rules load with the rls loader and answer descriptors.
TEST(ConfigExamples, EnvoyRlsRulesLoadAndAnswer) {
  const policy::Config config = load("envoy-rls.yaml");
  EXPECT_FALSE(config.server.grpc_listen.empty());
  ASSERT_EQ(config.rls.config, (kConfigs / "ratelimit").lexically_normal().string());
  Result<rls::RlsRules> rules = rls::load_rls_rules((kSource / config.rls.config).string());
  ASSERT_TRUE(rules.has_value()) << rules.error().message;
  ASSERT_TRUE(rules->domains.contains("edge"));

  MemoryStore store;
  rls::RlsEngine engine(store, std::make_shared<const rls::RlsRules>(std::move(*rules)));
  const auto ask = [&](std::vector<rls::RlsEntry> entries) {
    rls::RlsRequest request{.domain = "edge"};
    request.descriptors.push_back({.entries = std::move(entries)});
    std::optional<Result<rls::RlsResponse>> out;
    engine.should_rate_limit(request, [&](Result<rls::RlsResponse> r) { out = std::move(r); });
    EXPECT_TRUE(out && *out) << (out && !*out ? out->error().message : "no answer");
    return out && *out ? **out : rls::RlsResponse{};
  };
  rls::RlsResponse address = ask({{"remote_address", "203.0.113.7"}});
  EXPECT_EQ(address.overall_code, rls::Code::kOk);
  ASSERT_EQ(address.statuses.size(), 1u);
  EXPECT_EQ(address.statuses[0].current_limit, (rls::CurrentLimit{"", 100, rls::Unit::kMinute}));
  EXPECT_EQ(address.statuses[0].limit_remaining, 99u);

  rls::RlsResponse internal = ask({{"remote_address", "10.1.2.3"}});
  EXPECT_EQ(internal.overall_code, rls::Code::kOk);
  EXPECT_FALSE(internal.statuses.at(0).current_limit.has_value()) << "unlimited";

  rls::RlsResponse search = ask({{"api_key", "k1"}, {"path", "/search"}});
  EXPECT_EQ(search.statuses.at(0).current_limit, (rls::CurrentLimit{"", 10, rls::Unit::kMinute}));
  rls::RlsResponse other = ask({{"api_key", "k1"}, {"path", "/orders"}});
  EXPECT_EQ(other.statuses.at(0).current_limit, (rls::CurrentLimit{"", 60, rls::Unit::kMinute}));
}

}  // namespace
}  // namespace spillway
