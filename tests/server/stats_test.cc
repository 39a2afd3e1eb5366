// GET /v1/stats and GET /dashboard on their own: the space-saving top-k's guarantees (a property
// test against exact counts), key display and masking, and the endpoint over loopback on the
// memory and Redis backends — counters that follow the requests sent, the most denied key,
// masking by default, the config's version after a reload, and dashboard: off.
#include "src/server/stats.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>

#include "spillway/memory_store.h"
#include "spillway/redis_store.h"
#include "src/policy/keys.h"
#include "src/server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {
namespace json = boost::json;
using testing::http;

// For any stream: every reported count bounds the true count from above, count − error from
// below, and every key denied more than total / capacity times is among the reported.
RC_GTEST_PROP(TopKeys, SpaceSavingBoundsHoldForAnyStream, ()) {
  const auto capacity = *rc::gen::inRange<std::size_t>(1, 12);
  // Skewed streams: small alphabets, some keys much more frequent.
  const auto stream = *rc::gen::container<std::vector<int>>(
      rc::gen::weightedOneOf<int>({{6, rc::gen::inRange(0, 4)}, {3, rc::gen::inRange(0, 40)}}));
  TopKeys top(capacity);
  std::map<std::string, std::uint64_t> exact;
  for (int k : stream) {
    const std::string key = "k" + std::to_string(k);
    top.add(key);
    ++exact[key];
  }
  const std::vector<TopKeys::Entry> reported = top.top(capacity);
  RC_ASSERT(reported.size() == std::min(capacity, exact.size()));
  for (const TopKeys::Entry& e : reported) {
    RC_ASSERT(e.count >= exact[e.key]);
    RC_ASSERT(e.count - e.error <= exact[e.key]);
  }
  for (const auto& [key, count] : exact) {
    if (count * capacity > stream.size()) {
      RC_ASSERT(std::any_of(reported.begin(), reported.end(),
                            [&](const TopKeys::Entry& e) { return e.key == key; }));
    }
  }
  for (std::size_t i = 1; i < reported.size(); ++i) {
    RC_ASSERT(reported[i - 1].count >= reported[i].count);
  }
}

TEST(DisplayKey, ShowsTheLayerAndValuesAndMasksByDefault) {
  std::string key = "endpoint";
  policy::append_key_part(key, "secret-api-key-1");
  policy::append_key_part(key, "/search");
  EXPECT_EQ(display_key(key, false),
            std::make_pair(std::string("endpoint"), std::string("secret-api-key-1 | /search")));
  const auto [layer, shown] = display_key(key, true);
  EXPECT_EQ(layer, "endpoint");
  EXPECT_EQ(shown.find("secret-api"), std::string::npos) << shown;
  EXPECT_TRUE(shown.starts_with("sec***#")) << shown;
  EXPECT_NE(shown.find(" | /***#"), std::string::npos) << shown;  // a quarter of 7 bytes: 1
  // Values under 4 bytes show nothing but the hash; the salt changes the hash.
  EXPECT_TRUE(display_key(std::string(policy::kLimitEndpointPrefix) + "k9z", true)
                  .second.starts_with("***#"));
  EXPECT_NE(display_key(key, true, 1).second, display_key(key, true, 2).second);
  // In clear, bytes that are not UTF-8 are escaped: the JSON answer stays valid.
  std::string binary = "gateway";
  policy::append_key_part(binary,
                          "\xff\xfe"
                          "ab");
  EXPECT_EQ(display_key(binary, false).second, "\\xff\\xfeab");
  // Distinct values stay distinct when masked; the same value masks the same way.
  std::string other = "endpoint";
  policy::append_key_part(other, "secret-api-key-2");
  policy::append_key_part(other, "/search");
  EXPECT_NE(display_key(other, true).second, shown);
  EXPECT_EQ(display_key(key, true).second, shown);
  // POST /v1/limit's keys, and a key of no known shape (masked whole).
  EXPECT_EQ(display_key(std::string(policy::kLimitEndpointPrefix) + "user-42", false).first,
            "limit");
  EXPECT_EQ(display_key("edge:99:x", false).second, "edge:99:x");
  EXPECT_EQ(display_key("edge:99:x", true).second.find("99:x"), std::string::npos);
}

// Numbers are plain decimals, as people and dashboards read them: 12.2, not boost::json's 1.22E1.
TEST(StatsJson, NumbersArePlainDecimalsNeverExponents) {
  Metrics::Snapshot metrics;
  metrics.decision_latency.buckets[0] = 3;  // three answers under 25 µs: p50 = p99 = 0.025 ms
  metrics.decision_latency.count = 3;
  metrics.outcomes = {4, 12345678901};
  StatsView view{.metrics = &metrics,
                 .backend_kind = "memory",
                 .uptime_s = 12.2,
                 .now_unix_ms = 1796143200123};
  const std::string body = stats_json(view);
  EXPECT_NE(body.find("\"uptime_s\":12.2,"), std::string::npos) << body;
  EXPECT_NE(body.find("\"now_unix_ms\":1796143200123,"), std::string::npos) << body;
  EXPECT_NE(body.find("\"p50\":0.025,"), std::string::npos) << body;
  EXPECT_NE(body.find("\"total_decisions\":12345678905,"), std::string::npos) << body;
  for (std::size_t at = body.find_first_of("eE"); at != std::string::npos;
       at = body.find_first_of("eE", at + 1)) {
    const bool after_digit = at > 0 && body[at - 1] >= '0' && body[at - 1] <= '9';
    EXPECT_FALSE(after_digit) << "an exponent at " << at << ": " << body;
  }
  // Still JSON, and the same numbers read back.
  const json::object parsed = json::parse(body).as_object();
  EXPECT_EQ(parsed.at("uptime_s").as_double(), 12.2);
  EXPECT_EQ(parsed.at("backend").at("latency_ms").at("p99").as_double(), 0.025);
  EXPECT_EQ(parsed.at("backend").at("kind").as_string(), "memory");
  // A tiny and a huge uptime are plain decimals too.
  for (const double uptime : {0.0005, 1e21}) {
    view.uptime_s = uptime;
    const json::object again = json::parse(stats_json(view)).as_object();
    EXPECT_EQ(again.at("uptime_s").to_number<double>(), uptime);
    EXPECT_EQ(stats_json(view).find("E"), std::string::npos) << stats_json(view);
  }
}

testing::RedisServer& stats_redis() {
  static testing::RedisServer* server = new testing::RedisServer();
  return *server;
}

using Running = testing::RunningService;

Running start_stats(const std::string& backend, policy::Config config) {
  static int counter = 0;
  std::unique_ptr<Store> store;
  if (backend == "memory") {
    store = std::make_unique<MemoryStore>();
    config.backend.url = "memory";
  } else {
    config.backend.url = stats_redis().url();
    store = std::move(*RedisStore::open(
        {.url = stats_redis().url(),
         .key_prefix = "stats" + std::to_string(getpid()) + "-" + std::to_string(counter++)}));
  }
  return testing::start_service(std::move(config), std::move(store));
}

json::object stats_of(std::uint16_t port) {
  testing::HttpReply reply = http(port, "GET", "/v1/stats");
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.header("content-type"), "application/json");
  return json::parse(reply.body).as_object();
}

std::int64_t layer_count(const json::object& stats, const std::string& layer,
                         const std::string& outcome) {
  for (const json::value& d : stats.at("decisions").as_array()) {
    if (d.at("layer").as_string() == layer) return d.at(outcome).to_number<std::int64_t>();
  }
  return 0;
}

class Stats : public ::testing::TestWithParam<std::string> {};

TEST_P(Stats, CountersFollowTheRequestsAndTheMostDeniedKeyLeads) {
  Running s = start_stats(GetParam(), policy::default_config());
  json::object before = stats_of(s.port());
  EXPECT_EQ(before.at("total_decisions").to_number<std::int64_t>(), 0);
  EXPECT_EQ(before.at("top_denied").as_array().size(), 0u);
  // Redis connects in the background: up once it has.
  EXPECT_TRUE(
      testing::wait_until([&] { return stats_of(s.port()).at("backend").at("up").as_bool(); }));
  EXPECT_EQ(before.at("backend").at("kind").as_string(),
            GetParam() == "memory" ? "memory" : "redis");
  EXPECT_EQ(before.at("config").at("version").to_number<int>(), 0);
  EXPECT_EQ(before.at("config").at("layers").as_array().size(), 3u);
  // /search allows 10 per minute per API key: 25 requests, 15 denied by the endpoint layer; a
  // second key is denied 3 times (its /export allows 5).
  const std::string search = R"({"ip":"203.0.113.7","api_key":"alpha-key","endpoint":"/search"})";
  const std::string exporting = R"({"ip":"203.0.113.8","api_key":"beta-key","endpoint":"/export"})";
  for (int i = 0; i < 25; ++i) http(s.port(), "POST", "/v1/check", search);
  for (int i = 0; i < 8; ++i) http(s.port(), "POST", "/v1/check", exporting);
  json::object after = stats_of(s.port());
  EXPECT_EQ(after.at("total_decisions").to_number<std::int64_t>(), 33);
  EXPECT_EQ(after.at("denied_decisions").to_number<std::int64_t>(), 18);
  EXPECT_EQ(layer_count(after, "endpoint", "denied"), 18);
  EXPECT_EQ(layer_count(after, "endpoint", "allowed"), 15);
  const json::array& top = after.at("top_denied").as_array();
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].at("layer").as_string(), "endpoint");
  EXPECT_EQ(top[0].at("count").to_number<int>(), 15);
  EXPECT_EQ(top[0].at("error").to_number<int>(), 0);
  EXPECT_EQ(top[1].at("count").to_number<int>(), 3);
  EXPECT_TRUE(top[0].at("plan").is_null());  // the endpoint layer has no plans
  // Masked by default: no key value in the answer.
  EXPECT_TRUE(after.at("top_denied_masked").as_bool());
  const std::string body = http(s.port(), "GET", "/v1/stats").body;
  EXPECT_EQ(body.find("alpha-key"), std::string::npos) << body;
  EXPECT_TRUE(top[0].at("key").as_string().starts_with("al***#")) << top[0].at("key");
  EXPECT_GT(after.at("uptime_s").to_number<double>(), 0);
  EXPECT_GT(after.at("backend").at("latency_ms").at("p99").to_number<double>(), 0);
}

// now_unix_ms is the server's wall clock (the dashboard's time axis): an integer count of ms
// since the Unix epoch, between this test's own readings of the system clock before and after
// the request.
TEST_P(Stats, NowIsTheWallClockInMillisecondsSinceTheEpoch) {
  Running s = start_stats(GetParam(), policy::default_config());
  const auto wall_ms = [] {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  };
  const std::int64_t before = wall_ms();
  const json::object first = stats_of(s.port());
  const std::int64_t after = wall_ms();
  ASSERT_TRUE(first.at("now_unix_ms").is_int64() || first.at("now_unix_ms").is_uint64())
      << json::serialize(first.at("now_unix_ms"));
  const auto now = first.at("now_unix_ms").to_number<std::int64_t>();
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
}

// A key denied by a by_plan layer is listed with the plan in force when it was denied.
TEST_P(Stats, ADenialByAPlanLayerNamesThePlan) {
  Running s = start_stats(GetParam(), policy::default_config());
  // /orders is no route of the endpoint layer: the gateway's free plan (60/min) denies.
  const std::string body = R"({"ip":"203.0.113.9","api_key":"gamma-key","endpoint":"/orders"})";
  for (int i = 0; i < 63; ++i) http(s.port(), "POST", "/v1/check", body);
  const json::object stats = stats_of(s.port());
  const json::array& top = stats.at("top_denied").as_array();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].at("layer").as_string(), "gateway");
  EXPECT_EQ(top[0].at("plan").as_string(), "free");
  EXPECT_EQ(top[0].at("count").to_number<int>(), 3);
}

TEST_P(Stats, ClearKeysAReloadAndTheDashboardSwitch) {
  policy::Config config = policy::default_config();
  config.server.dashboard_mask_keys = false;
  Running s = start_stats(GetParam(), config);
  for (int i = 0; i < 7; ++i) {
    http(s.port(), "POST", "/v1/limit", R"({"key":"user-9","limit":5,"period":"1m"})");
  }
  json::object stats = stats_of(s.port());
  ASSERT_EQ(stats.at("top_denied").as_array().size(), 1u);
  EXPECT_EQ(stats.at("top_denied").as_array()[0].at("key").as_string(), "user-9");
  EXPECT_EQ(stats.at("top_denied").as_array()[0].at("layer").as_string(), "limit");
  EXPECT_EQ(stats.at("top_denied").as_array()[0].at("count").to_number<int>(), 2);
  const std::string first_load(stats.at("config").at("loaded_at").as_string());
  EXPECT_EQ(first_load.size(), 20u) << first_load;  // 2026-12-01T16:40:00Z
  EXPECT_EQ(first_load.back(), 'Z');

  testing::HttpReply page = http(s.port(), "GET", "/dashboard");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("uPlot"), std::string::npos);
  EXPECT_NE(page.body.find("/v1/stats"), std::string::npos);
  EXPECT_EQ(page.body.find("src=\"http"), std::string::npos);
  EXPECT_NE(page.header("content-security-policy").find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(http(s.port(), "POST", "/dashboard").status, 405);

  // A reload: version 1, and the switch turns the page and its data off.
  policy::Config off = config;
  off.server.dashboard = false;
  off.policy.layers[0].mode = policy::LayerMode::kShadow;
  ASSERT_TRUE(s.service->reload(off));
  testing::HttpReply gone = http(s.port(), "GET", "/dashboard");
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.body.find("server.dashboard is off"), std::string::npos) << gone.body;
  EXPECT_EQ(http(s.port(), "GET", "/v1/stats").status, 404);
  off.server.dashboard = true;
  ASSERT_TRUE(s.service->reload(off));
  json::object reloaded = stats_of(s.port());
  EXPECT_EQ(reloaded.at("config").at("version").to_number<int>(), 2);
  EXPECT_EQ(reloaded.at("config").at("layers").as_array()[0].at("mode").as_string(), "shadow");
}

INSTANTIATE_TEST_SUITE_P(Backends, Stats, ::testing::Values("memory", "redis"));

}  // namespace
}  // namespace spillway::server
