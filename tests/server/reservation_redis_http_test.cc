// Usage-based limits over HTTP on Redis (docs/SPEC.md §5.3), the scenario of issue 22: two
// `spillway serve` processes share one redis-server (and, in one test, a Redis Cluster) and a
// policy of requests per hour (rpm, 100) and tokens per hour (tpm, 10,000, `cost: tokens`). A
// reservation lives in Redis, so whatever one server reserves the other one settles, with the
// memory backend's semantics (tests/server/reservation_http_test.cc, which holds a clock still).
//
// On Redis the clock is Redis' TIME, so every fact below holds whatever the exact time is: both
// layers are fixed windows of one hour, and the test waits for the next hour when this one ends
// within 8 s, so that the window cannot roll under it; a denial's wait (to the end of the hour)
// is checked against the hour's end seen from the client's send and from its answer (the same
// clock as Redis' on this machine).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

namespace json = boost::json;

constexpr std::int64_t kRedisHttpSecond = 1'000'000;  // µs
constexpr std::int64_t kRedisHttpHour = 3600 * kRedisHttpSecond;

std::string redis_http_temp(const std::string& name) {
  return "/tmp/spillway_reservation_redis_" + std::to_string(::getpid()) + "_" + name;
}

// µs since the Unix epoch, rounded down (the clock Redis' TIME reads).
std::int64_t redis_http_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// If this hour ends within 8 s, waits until the next one has begun: every window of the test's
// layers is one hour, and a scenario must run inside one.
void inside_one_hour() {
  const std::int64_t left = kRedisHttpHour - redis_http_now_us() % kRedisHttpHour;
  if (left < 8 * kRedisHttpSecond)  // real time: the servers' windows follow the wall clock
    std::this_thread::sleep_for(std::chrono::microseconds(left + 100'000));
}

// Redis' count of keys that expired (INFO stats: expired_keys); -1 when not found.
long long redis_expired_keys(const testing::RedisServer& redis) {
  const std::string stats = redis.cli("INFO stats");
  const std::string name = "expired_keys:";
  const std::size_t at = stats.find(name);
  return at == std::string::npos ? -1 : std::stoll(stats.substr(at + name.size()));
}

// An API key no other test (or earlier run on a shared cluster) has used.
std::string redis_http_api_key() {
  std::random_device random;
  std::ostringstream out;
  out << "sk-live-" << std::hex << random() << random() << random();
  return out.str();
}

// rpm: 100 requests an hour; tpm: 10,000 tokens an hour (each request costs its "tokens").
std::string write_config(const std::string& url, const std::string& name, const std::string& ttl) {
  const std::string path = redis_http_temp(name + ".yaml");
  std::ofstream(path) << "server:\n  access_log: off\n  reservation_ttl: " << ttl
                      << "\nbackend:\n  url: " << url << "\n  timeout: 2s\n  on_error: deny\n"
                      << "layers:\n"
                         "  - name: rpm\n    key: [api_key]\n    algorithm: fixed_window\n"
                         "    limit: 100/hour\n"
                         "  - name: tpm\n    key: [api_key]\n    algorithm: fixed_window\n"
                         "    cost: tokens\n    limit: 10000/hour\n";
  return path;
}

// POSTs `body`, checks the status and returns the answer's JSON object (empty if it is none).
json::object post(std::uint16_t port, const std::string& path, const std::string& body,
                  int status) {
  const testing::HttpReply reply = testing::http(port, "POST", path, body);
  EXPECT_EQ(reply.status, status) << "POST " << path << " " << body << " -> " << reply.body;
  json::error_code ec;
  json::value value = json::parse(reply.body, ec);
  if (ec || !value.is_object()) {
    ADD_FAILURE() << "POST " << path << " " << body << ": not a JSON object: " << reply.body;
    return {};
  }
  return value.as_object();
}

// The layer `name` of an answer's "layers".
json::object layer(const json::object& answer, std::string_view name) {
  if (const json::value* layers = answer.if_contains("layers"); layers && layers->is_array()) {
    for (const json::value& l : layers->as_array()) {
      if (!l.is_object()) continue;
      const json::value* n = l.as_object().if_contains("name");
      if (n != nullptr && n->is_string() && n->as_string() == name) return l.as_object();
    }
  }
  ADD_FAILURE() << "no layer " << name << " in " << json::serialize(answer);
  return {};
}

std::int64_t number(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  json::error_code ec;
  const std::int64_t n = v != nullptr ? v->to_number<std::int64_t>(ec) : 0;
  if (v == nullptr || ec) {
    ADD_FAILURE() << "no whole number \"" << field << "\" in " << json::serialize(o);
    return -999'999;
  }
  return n;
}

std::string text(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// A boolean field: "true", "false", or "missing".
std::string flag(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || !v->is_bool()) return "missing";
  return v->as_bool() ? "true" : "false";
}

// A fixed window's wait for the end of the hour, in ms rounded up as the JSON rounds it, decided
// at some instant between `sent` and `answered`.
void expect_wait_to_the_hour_end(std::int64_t retry_after_ms, std::int64_t sent,
                                 std::int64_t answered) {
  const std::int64_t end = (sent / kRedisHttpHour + 1) * kRedisHttpHour;
  EXPECT_GT(retry_after_ms, 0);
  EXPECT_GE(retry_after_ms, (end - answered + 999) / 1000);
  EXPECT_LE(retry_after_ms, (end - sent + 999) / 1000);
}

// Two servers on `url`: the issue's reserve, deny, commit (refund), admit, commit above the
// estimate (debt), deny with a wait; 404, 409 and 400; per-layer costs and /v1/limit. Each
// reservation is settled through the server that did not make it.
void issue_scenario(const std::string& url, const std::string& name) {
  const std::string config = write_config(url, name, "10m");
  testing::ServeProcess a({"--config", config}, redis_http_temp(name + "_a.log"));
  testing::ServeProcess b({"--config", config}, redis_http_temp(name + "_b.log"));
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  const std::uint16_t pa = a.port(), pb = b.port();
  const std::string key = redis_http_api_key();
  const auto reserve = [&](std::uint16_t port, int tokens, int status) {
    return post(
        port, "/v1/check",
        R"({"api_key":")" + key + R"(","reserve":true,"tokens":)" + std::to_string(tokens) + "}",
        status);
  };
  const auto commit = [&](std::uint16_t port, const std::string& id, const std::string& rest,
                          int status) {
    return post(port, "/v1/commit", R"({"reservation":")" + id + "\"" + rest + "}", status);
  };
  const auto cancel = [&](std::uint16_t port, const std::string& id, int status) {
    return post(port, "/v1/cancel", R"({"reservation":")" + id + R"("})", status);
  };
  const std::string one_token = R"({"api_key":")" + key + R"(","tokens":1})";
  inside_one_hour();
  const std::int64_t started = redis_http_now_us();

  // Two estimates of 4,000 fit in 10,000; a third does not, and reserves nothing.
  const json::object first = reserve(pa, 4'000, 200);
  const std::string first_id = text(first, "reservation");
  ASSERT_EQ(first_id.size(), 22u) << json::serialize(first);
  EXPECT_EQ(number(first, "reservation_expires_ms"), 600'000);
  EXPECT_EQ(number(layer(first, "tpm"), "remaining"), 6'000);
  EXPECT_EQ(number(layer(first, "rpm"), "remaining"), 99);
  const json::object second = reserve(pb, 4'000, 200);
  const std::string second_id = text(second, "reservation");
  ASSERT_EQ(second_id.size(), 22u) << json::serialize(second);
  EXPECT_NE(second_id, first_id);
  EXPECT_EQ(number(layer(second, "tpm"), "remaining"), 2'000);
  const json::object third = reserve(pa, 4'000, 429);
  EXPECT_EQ(text(third, "denied_by"), "tpm");
  EXPECT_FALSE(third.contains("reservation")) << json::serialize(third);

  // The first used 1,000 tokens, committed through the other server: 3,000 come back, and the
  // request layer keeps its 1.
  const json::object committed = commit(pb, first_id, R"(,"cost":1000)", 200);
  EXPECT_EQ(text(committed, "reservation"), first_id);
  EXPECT_EQ(text(committed, "settled"), "commit");
  const json::object tpm = layer(committed, "tpm");
  EXPECT_EQ(number(tpm, "estimate"), 4'000);
  EXPECT_EQ(number(tpm, "actual"), 1'000);
  EXPECT_EQ(number(tpm, "refunded"), 3'000);
  EXPECT_EQ(number(tpm, "charged"), 0);
  EXPECT_EQ(number(tpm, "remaining"), 5'000);
  EXPECT_EQ(flag(tpm, "allowed"), "true");
  const json::object rpm = layer(committed, "rpm");
  EXPECT_EQ(number(rpm, "estimate"), 1);
  EXPECT_EQ(number(rpm, "actual"), 1);
  EXPECT_EQ(number(rpm, "refunded"), 0);
  EXPECT_EQ(number(rpm, "remaining"), 98);

  // Now the third request fits; the denied one charged neither layer.
  const json::object fourth = reserve(pa, 4'000, 200);
  const std::string fourth_id = text(fourth, "reservation");
  ASSERT_EQ(fourth_id.size(), 22u) << json::serialize(fourth);
  EXPECT_EQ(number(layer(fourth, "tpm"), "remaining"), 1'000);
  EXPECT_EQ(number(layer(fourth, "rpm"), "remaining"), 97);

  // The second used 9,000, 5,000 above its estimate: charged without a check (debt). The key
  // counts 1,000 + 9,000 + 4,000 = 14,000 of its 10,000 this hour, so it is denied until the hour
  // ends (fixed_window: (w + 1)·P − now).
  std::int64_t sent = redis_http_now_us();
  const json::object over = commit(pa, second_id, R"(,"cost":9000)", 200);
  std::int64_t answered = redis_http_now_us() + 1;
  const json::object over_tpm = layer(over, "tpm");
  EXPECT_EQ(number(over_tpm, "estimate"), 4'000);
  EXPECT_EQ(number(over_tpm, "actual"), 9'000);
  EXPECT_EQ(number(over_tpm, "refunded"), 0);
  EXPECT_EQ(number(over_tpm, "charged"), 5'000);
  EXPECT_EQ(number(over_tpm, "remaining"), 0);
  EXPECT_EQ(flag(over_tpm, "allowed"), "false") << "a key in debt answers its wait";
  expect_wait_to_the_hour_end(number(over_tpm, "retry_after_ms"), sent, answered);
  sent = redis_http_now_us();
  const json::object next = post(pb, "/v1/check", one_token, 429);
  answered = redis_http_now_us() + 1;
  EXPECT_EQ(text(next, "denied_by"), "tpm");
  expect_wait_to_the_hour_end(number(next, "retry_after_ms"), sent, answered);
  expect_wait_to_the_hour_end(number(layer(next, "tpm"), "retry_after_ms"), sent, answered);

  // Settled once: a second commit or cancel, through either server, is a 409 naming it.
  const json::object again = commit(pa, first_id, R"(,"cost":1000)", 409);
  EXPECT_NE(text(again, "error").find("already settled"), std::string::npos)
      << json::serialize(again);
  cancel(pb, first_id, 409);
  commit(pb, second_id, R"(,"cost":1)", 409);
  cancel(pa, second_id, 409);

  // Unknown ids: 404, through either server.
  commit(pa, "AAAAAAAAAAAAAAAAAAAAAA", R"(,"cost":1)", 404);
  commit(pb, "no-such-reservation", R"(,"cost":1)", 404);
  cancel(pb, "AAAAAAAAAAAAAAAAAAAAAA", 404);

  // Bad costs: 400, and the reservation stays open as it was.
  for (const char* bad :
       {R"(,"cost":-1)", R"(,"cost":1.5)", R"(,"cost":"many")", R"(,"cost":4503599627370497)",
        R"(,"costs":{"nope":1})", R"(,"costs":[1])", R"(,"costs":{})", ""}) {
    const json::object refused = commit(pb, fourth_id, bad, 400);
    EXPECT_FALSE(text(refused, "error").empty()) << bad << ": " << json::serialize(refused);
  }
  const json::object cancelled = cancel(pb, fourth_id, 200);
  EXPECT_EQ(text(cancelled, "settled"), "cancel");
  const json::object cancelled_tpm = layer(cancelled, "tpm");
  EXPECT_EQ(number(cancelled_tpm, "estimate"), 4'000);
  EXPECT_EQ(number(cancelled_tpm, "actual"), 0);
  EXPECT_EQ(number(cancelled_tpm, "refunded"), 4'000);
  EXPECT_EQ(number(cancelled_tpm, "remaining"), 0);  // 10,000 of 10,000
  EXPECT_EQ(number(layer(cancelled, "rpm"), "refunded"), 1);
  EXPECT_EQ(number(layer(cancelled, "rpm"), "remaining"), 98);
  commit(pa, fourth_id, R"(,"cost":1)", 409);
  // Still full this hour.
  sent = redis_http_now_us();
  const json::object still = post(pa, "/v1/check", one_token, 429);
  answered = redis_http_now_us() + 1;
  expect_wait_to_the_hour_end(number(still, "retry_after_ms"), sent, answered);

  // Per-layer costs on another key: "costs" names the layers.
  const std::string other = redis_http_api_key();
  const json::object small =
      post(pa, "/v1/check", R"({"api_key":")" + other + R"(","reserve":true,"tokens":800})", 200);
  const json::object per_layer =
      commit(pb, text(small, "reservation"), R"(,"costs":{"tpm":100,"rpm":0})", 200);
  EXPECT_EQ(number(layer(per_layer, "tpm"), "refunded"), 700);
  EXPECT_EQ(number(layer(per_layer, "tpm"), "remaining"), 9'900);
  EXPECT_EQ(number(layer(per_layer, "rpm"), "refunded"), 1);
  EXPECT_EQ(number(layer(per_layer, "rpm"), "remaining"), 100);

  // /v1/limit reserves its one layer, "limit"; "cost" is its actual cost.
  const json::object limited =
      post(pb, "/v1/limit",
           R"({"key":"export-)" + other +
               R"(","limit":100,"period":"1h","algorithm":"fixed_window","cost":40,)"
               R"("reserve":true})",
           200);
  EXPECT_EQ(number(limited, "remaining"), 60);
  const json::object limit_done = commit(pa, text(limited, "reservation"), R"(,"cost":25)", 200);
  EXPECT_EQ(number(layer(limit_done, "limit"), "refunded"), 15);
  EXPECT_EQ(number(layer(limit_done, "limit"), "remaining"), 75);

  EXPECT_EQ(started / kRedisHttpHour, redis_http_now_us() / kRedisHttpHour)
      << "the scenario took more than 8 s and crossed an hour's edge: its numbers do not hold";
  EXPECT_EQ(a.stop(SIGTERM), 0) << a.log();
  EXPECT_EQ(b.stop(SIGTERM), 0) << b.log();
  std::remove(config.c_str());
}

TEST(ReservationRedisHttp, TheIssueScenarioAcrossTwoServersOnOneRedis) {
  testing::RedisServer redis;
  issue_scenario(redis.url(), "redis");
}

TEST(ReservationClusterHttp, TheIssueScenarioAcrossTwoServersOnARedisCluster) {
  issue_scenario(testing::shared_cluster().url(), "cluster");
}

TEST(ReservationRedisHttp, AnUnsettledReservationExpiresWithItsEstimateCharged) {
  testing::RedisServer redis;
  const std::string config = write_config(redis.url(), "expiry", "300ms");
  testing::ServeProcess a({"--config", config}, redis_http_temp("expiry_a.log"));
  testing::ServeProcess b({"--config", config}, redis_http_temp("expiry_b.log"));
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  const std::string key = redis_http_api_key();
  inside_one_hour();
  const long long expired_before = redis_expired_keys(redis);
  const std::int64_t started = redis_http_now_us();
  const json::object reserved = post(
      a.port(), "/v1/check", R"({"api_key":")" + key + R"(","reserve":true,"tokens":4000})", 200);
  const std::string id = text(reserved, "reservation");
  ASSERT_EQ(id.size(), 22u) << json::serialize(reserved);
  EXPECT_EQ(number(reserved, "reservation_expires_ms"), 300);
  // Past its ttl: Redis' clock ends its record ("spillway" is the default key prefix).
  const std::string record = "'spillway:rsv:{" + id + "}'";
  ASSERT_TRUE(testing::wait_until([&] { return redis.cli("EXISTS " + record) == "0\n"; },
                                  std::chrono::seconds(10)))
      << "the record outlived its ttl";
  // A wrong record name would be "gone" at once: Redis counts the record's expiry (this Redis is
  // the test's own; nothing else in it expires within the hour).
  EXPECT_GT(redis_expired_keys(redis), expired_before) << "no key expired: not " << record;
  EXPECT_GE(redis_http_now_us(), started + 300'000) << "gone before its ttl: " << record;
  post(b.port(), "/v1/commit", R"({"reservation":")" + id + R"(","cost":1})", 404);
  post(a.port(), "/v1/cancel", R"({"reservation":")" + id + R"("})", 404);
  // Its estimate stays charged: 6,000 tokens are left this hour, not 10,000.
  post(b.port(), "/v1/check", R"({"api_key":")" + key + R"(","tokens":6001})", 429);
  const json::object rest =
      post(a.port(), "/v1/check", R"({"api_key":")" + key + R"(","tokens":6000})", 200);
  EXPECT_EQ(number(layer(rest, "tpm"), "remaining"), 0);
  EXPECT_EQ(started / kRedisHttpHour, redis_http_now_us() / kRedisHttpHour)
      << "crossed an hour's edge: the numbers do not hold";
  EXPECT_EQ(a.stop(SIGTERM), 0) << a.log();
  EXPECT_EQ(b.stop(SIGTERM), 0) << b.log();
  std::remove(config.c_str());
}

}  // namespace
}  // namespace spillway
