// Concurrency limits over HTTP (docs/SPEC.md §2.5, §5.6), on the memory, Redis and Cluster
// backends: POST /v1/check answers an admitted request with a ticket, POST /v1/release gives its
// slot back (200, then 409; 404 for a ticket never given; 400 naming what is wrong, nothing
// changed), all-or-nothing with the request's rate layer both ways; POST /v1/limit takes
// "algorithm": "concurrency"; GET /v1/auth refuses a concurrency layer it could never release;
// the metrics count slots taken and given back.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>

#include "src/config/config.h"
#include "src/server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

testing::RedisServer& concurrency_http_redis() {
  static testing::RedisServer* instance = new testing::RedisServer();
  return *instance;
}

// 4 requests an hour per API key, at most 2 of them in flight.
constexpr char kInFlight[] = R"(layers:
  - name: api
    key: [api_key]
    algorithm: fixed_window
    limit: 4/1h
  - name: in_flight
    key: [api_key]
    algorithm: concurrency
    limit: 2
    hold_ttl: 1m
)";

testing::RunningService start_in_flight(const std::string& backend) {
  Result<policy::Config> config = policy::parse_config(kInFlight);
  if (!config) {
    ADD_FAILURE() << config.error().message;
    return {};
  }
  std::unique_ptr<Store> store = testing::open_test_store(
      testing::backend_url(backend, [] { return concurrency_http_redis().url(); }), "conc",
      /*connected=*/false);
  if (!store) return {};
  return testing::start_service(std::move(*config), std::move(store));
}

class Concurrency : public ::testing::TestWithParam<std::string> {};

std::string key_for(const std::string& backend, const std::string& test) {
  return "conc-" + backend + "-" + test + "-" + std::to_string(::getpid());
}

boost::json::object answer_of(const HttpReply& reply) {
  boost::system::error_code error;
  boost::json::value v = boost::json::parse(reply.body, error);
  if (error || !v.is_object()) {
    ADD_FAILURE() << "not a JSON object: " << reply.body;
    return {};
  }
  return v.as_object();
}

// The remaining of layer `name` in a decision's "layers".
std::int64_t remaining_of(const boost::json::object& answer, const std::string& name) {
  if (!answer.contains("layers")) return -1;
  for (const auto& layer : answer.at("layers").as_array()) {
    if (layer.at("name").as_string() == name) return layer.at("remaining").as_int64();
  }
  return -1;
}

TEST_P(Concurrency, ATicketHoldsItsSlotUntilReleasedAndNothingIsChargedTwice) {
  testing::RunningService s = start_in_flight(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam(), "ticket");
  const std::string body = R"({"api_key":")" + key + R"("})";
  const auto check = [&] { return http(s.port(), "POST", "/v1/check", body); };
  const auto release = [&](const std::string& ticket) {
    return http(s.port(), "POST", "/v1/release", R"({"ticket":")" + ticket + R"("})");
  };

  HttpReply a = check();
  ASSERT_EQ(a.status, 200) << a.body;
  boost::json::object first = answer_of(a);
  ASSERT_TRUE(first.contains("ticket")) << a.body;
  EXPECT_EQ(first.at("ticket_expires_ms").as_int64(), 60'000) << a.body;
  EXPECT_EQ(remaining_of(first, "in_flight"), 1) << a.body;
  EXPECT_EQ(remaining_of(first, "api"), 3) << a.body;
  const std::string ticket_a = std::string(first.at("ticket").as_string());

  HttpReply b = check();
  ASSERT_EQ(b.status, 200) << b.body;
  const std::string ticket_b = std::string(answer_of(b).at("ticket").as_string());
  EXPECT_NE(ticket_a, ticket_b);

  // Both slots held: denied by in_flight, no ticket, and the rate layer is not charged.
  HttpReply full = check();
  EXPECT_EQ(full.status, 429) << full.body;
  boost::json::object denied = answer_of(full);
  EXPECT_EQ(denied.at("denied_by").as_string(), "in_flight") << full.body;
  EXPECT_FALSE(denied.contains("ticket")) << full.body;
  EXPECT_EQ(remaining_of(denied, "api"), 2) << full.body;

  // Bad input: 400 naming the field, nothing released.
  for (const std::string bad : {R"({})", R"({"ticket":5})", R"({"ticket":""})",
                                R"({"ticket":"x","extra":1})", R"([])", "not json"}) {
    HttpReply r = http(s.port(), "POST", "/v1/release", bad);
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
  }
  EXPECT_NE(http(s.port(), "POST", "/v1/release", R"({"ticket":5})").body.find("ticket"),
            std::string::npos);
  EXPECT_NE(http(s.port(), "POST", "/v1/release", R"({"tickets":"x"})").body.find("tickets"),
            std::string::npos);
  HttpReply too_long =
      http(s.port(), "POST", "/v1/release", R"({"ticket":")" + std::string(65, 'a') + R"("})");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_NE(too_long.body.find("65 bytes: a ticket is at most 64"), std::string::npos)
      << too_long.body;
  EXPECT_EQ(check().status, 429) << "a bad release freed a slot";

  // A ticket never given: 404.
  HttpReply unknown = release("AAAAAAAAAAAAAAAAAAAAAA");
  EXPECT_EQ(unknown.status, 404) << unknown.body;

  // Released: the slot comes back, the rate keeps its charge; a second release is a 409.
  HttpReply released = release(ticket_a);
  ASSERT_EQ(released.status, 200) << released.body;
  boost::json::object r = answer_of(released);
  for (const auto& layer : r.at("layers").as_array()) {
    const bool slot = layer.at("name").as_string() == "in_flight";
    EXPECT_EQ(layer.at("released").as_int64(), slot ? 1 : 0) << released.body;
  }
  HttpReply again = release(ticket_a);
  EXPECT_EQ(again.status, 409) << again.body;

  HttpReply c = check();  // the slot freed; the rate's third of four
  ASSERT_EQ(c.status, 200) << c.body;
  boost::json::object third = answer_of(c);
  EXPECT_EQ(remaining_of(third, "api"), 1) << c.body;
  EXPECT_EQ(release(ticket_b).status, 200);
  EXPECT_EQ(release(std::string(third.at("ticket").as_string())).status, 200);

  HttpReply d = check();  // the rate's last
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(release(std::string(answer_of(d).at("ticket").as_string())).status, 200);

  // Denied by the rate: no slot is taken (a peek, cost 0, shows both free).
  HttpReply over = check();
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(answer_of(over).at("denied_by").as_string(), "api") << over.body;
  HttpReply peek = http(s.port(), "POST", "/v1/check", R"({"api_key":")" + key + R"(","cost":0})");
  EXPECT_EQ(remaining_of(answer_of(peek), "in_flight"), 2) << peek.body;
  EXPECT_FALSE(answer_of(peek).contains("ticket")) << "a peek holds nothing: " << peek.body;

  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(spillway_holds_total{layer="in_flight",event="acquired"} 4)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(spillway_holds_total{layer="in_flight",event="released"} 4)"),
            std::string::npos)
      << metrics;
}

TEST_P(Concurrency, TheLimitEndpointTakesAConcurrencyLimit) {
  testing::RunningService s = start_in_flight(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam(), "limit");
  const std::string body =
      R"({"key":")" + key + R"(","algorithm":"concurrency","limit":1,"hold_ttl":"30s"})";
  HttpReply first = http(s.port(), "POST", "/v1/limit", body);
  ASSERT_EQ(first.status, 200) << first.body;
  boost::json::object taken = answer_of(first);
  ASSERT_TRUE(taken.contains("ticket")) << first.body;
  EXPECT_EQ(taken.at("ticket_expires_ms").as_int64(), 30'000);
  EXPECT_EQ(http(s.port(), "POST", "/v1/limit", body).status, 429);
  HttpReply released =
      http(s.port(), "POST", "/v1/release",
           R"({"ticket":")" + std::string(taken.at("ticket").as_string()) + R"("})");
  EXPECT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(http(s.port(), "POST", "/v1/limit", body).status, 200);
  // What a concurrency limit does not take is named.
  for (const std::string field :
       {R"("period":"1s")", R"("burst":2)", R"("max_delay":"1s")", R"("sync":"lease")"}) {
    HttpReply bad = http(s.port(), "POST", "/v1/limit",
                         R"({"key":"x","algorithm":"concurrency","limit":1,)" + field + "}");
    EXPECT_EQ(bad.status, 400) << field;
    EXPECT_NE(bad.body.find(field.substr(1, field.find('"', 1) - 1)), std::string::npos)
        << bad.body;
  }
  HttpReply rate_hold =
      http(s.port(), "POST", "/v1/limit", R"({"key":"x","limit":1,"period":"1s","hold_ttl":"1s"})");
  EXPECT_EQ(rate_hold.status, 400) << rate_hold.body;
}

TEST_P(Concurrency, OnlyATicketIsReleasedAndEverySettlementOfATicketGivesItsSlotBack) {
  testing::RunningService s = start_in_flight(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam(), "settle");
  // A reservation that holds no slot is no ticket: 400 naming it, and it is still open.
  HttpReply reserved = http(s.port(), "POST", "/v1/limit",
                            R"({"key":")" + key + R"(","limit":5,"period":"1h","reserve":true})");
  ASSERT_EQ(reserved.status, 200) << reserved.body;
  const std::string id(answer_of(reserved).at("reservation").as_string());
  HttpReply wrong = http(s.port(), "POST", "/v1/release", R"({"ticket":")" + id + R"("})");
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_NE(wrong.body.find("not a ticket"), std::string::npos) << wrong.body;
  EXPECT_EQ(
      http(s.port(), "POST", "/v1/commit", R"({"reservation":")" + id + R"(","cost":1})").status,
      200);
  // "reserve": true on the policy: one id, a reservation and a ticket; it lives as long as the
  // longer of the two (reservation_ttl, 10 minutes by default, against a 1 minute hold), and
  // its cancel gives the slot back too.
  HttpReply both =
      http(s.port(), "POST", "/v1/check", R"({"api_key":")" + key + R"(","reserve":true})");
  ASSERT_EQ(both.status, 200) << both.body;
  boost::json::object answer = answer_of(both);
  EXPECT_EQ(answer.at("reservation").as_string(), answer.at("ticket").as_string()) << both.body;
  EXPECT_EQ(answer.at("reservation_expires_ms").as_int64(), 600'000) << both.body;
  EXPECT_EQ(answer.at("ticket_expires_ms").as_int64(), 60'000) << both.body;
  HttpReply cancelled =
      http(s.port(), "POST", "/v1/cancel",
           R"({"reservation":")" + std::string(answer.at("reservation").as_string()) + R"("})");
  EXPECT_EQ(cancelled.status, 200) << cancelled.body;
  const std::string metrics = http(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(spillway_holds_total{layer="in_flight",event="released"} 1)"),
            std::string::npos)
      << metrics;
  HttpReply peek = http(s.port(), "POST", "/v1/check", R"({"api_key":")" + key + R"(","cost":0})");
  EXPECT_EQ(remaining_of(answer_of(peek), "in_flight"), 2) << peek.body;
  // A concurrency limit holds one slot per request: a cost of 2 names the field.
  HttpReply costly = http(s.port(), "POST", "/v1/limit",
                          R"({"key":"y","algorithm":"concurrency","limit":3,"cost":2})");
  EXPECT_EQ(costly.status, 400) << costly.body;
  EXPECT_NE(costly.body.find("cost"), std::string::npos) << costly.body;
}

TEST_P(Concurrency, AuthRefusesALayerItCouldNeverReleaseAndChargesNothing) {
  testing::RunningService s = start_in_flight(GetParam());
  ASSERT_TRUE(s.service);
  const std::string key = key_for(GetParam(), "auth");
  HttpReply auth = http(s.port(), "GET", "/v1/auth", "", {{"X-API-Key", key}});
  EXPECT_EQ(auth.status, 500) << auth.body;
  EXPECT_NE(auth.body.find("in_flight"), std::string::npos) << auth.body;
  EXPECT_NE(auth.body.find("release"), std::string::npos) << auth.body;
  HttpReply peek = http(s.port(), "POST", "/v1/check", R"({"api_key":")" + key + R"(","cost":0})");
  EXPECT_EQ(remaining_of(answer_of(peek), "api"), 4) << peek.body;
  EXPECT_EQ(remaining_of(answer_of(peek), "in_flight"), 2) << peek.body;
}

INSTANTIATE_TEST_SUITE_P(Backends, Concurrency, ::testing::Values("memory", "redis", "cluster"));

}  // namespace
}  // namespace spillway::server
