// Usage-based limits over HTTP on the memory backend (docs/SPEC.md §5.3), with the store's clock
// held still (a ManualClock), so that every number below follows from the contract: a
// tokens-per-minute policy (sliding_window, 10,000 a minute) where each request reserves its
// estimate, then commits what it really used.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spillway/clock.h"
#include "spillway/memory_store.h"
#include "src/config/config.h"
#include "tests/support/http_client.h"
#include "tests/support/llm_policy.h"
#include "tests/support/process.h"
#include "tests/support/running_service.h"

namespace spillway::server {
namespace {

using testing::http;
using testing::HttpReply;

constexpr Micros kStart = 1'000 * kMicrosPerMinute;  // a window's start: r = 0

policy::Config reservation_llm_config() {
  policy::Config config = policy::default_config();
  config.policy.layers = testing::llm_layers(100, 10'000);
  return config;
}

struct ReservationFixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(kStart);
  testing::RunningService service = testing::start_service(
      reservation_llm_config(), std::make_unique<MemoryStore>(MemoryStoreOptions{.clock = clock}));

  boost::json::object post(const std::string& path, const std::string& body, int status) {
    HttpReply reply = http(service.port(), "POST", path, body);
    EXPECT_EQ(reply.status, status) << path << " " << body << " -> " << reply.body;
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(reply.body, ec);
    if (ec || !value.is_object()) {
      ADD_FAILURE() << "not a JSON object: " << reply.body;
      return {};
    }
    return value.as_object();
  }
  boost::json::object reserve(int tokens, int status) {
    return post("/v1/check",
                R"({"api_key":"k1","reserve":true,"tokens":)" + std::to_string(tokens) + "}",
                status);
  }
};

// The layer named `name` of an answer's "layers".
boost::json::object layer(const boost::json::object& answer, std::string_view name) {
  for (const auto& l : answer.at("layers").as_array()) {
    if (l.as_object().at("name").as_string() == name) return l.as_object();
  }
  ADD_FAILURE() << "no layer " << name << " in " << boost::json::serialize(answer);
  return {};
}

std::int64_t number(const boost::json::object& o, std::string_view field) {
  return o.at(field).to_number<std::int64_t>();
}

TEST(ReservationHttp, TokensPerMinuteReserveThenCommitTheRealCost) {
  ReservationFixture f;
  const boost::json::object a = f.reserve(4'000, 200);
  ASSERT_TRUE(a.contains("reservation")) << boost::json::serialize(a);
  EXPECT_EQ(number(a, "reservation_expires_ms"), 10 * 60 * 1000);
  EXPECT_EQ(number(layer(a, "tpm"), "remaining"), 6'000);
  const boost::json::object b = f.reserve(4'000, 200);
  EXPECT_EQ(number(layer(b, "tpm"), "remaining"), 2'000);
  // A third estimate of 4,000 does not fit in the 2,000 left.
  const boost::json::object denied = f.reserve(4'000, 429);
  EXPECT_EQ(denied.at("denied_by").as_string(), "tpm");
  EXPECT_FALSE(denied.contains("reservation"));
  // The first request used 1,000 tokens: 3,000 come back.
  const boost::json::object committed = f.post(
      "/v1/commit",
      R"({"reservation":")" + std::string(a.at("reservation").as_string()) + R"(","cost":1000})",
      200);
  EXPECT_EQ(committed.at("settled").as_string(), "commit");
  const boost::json::object tpm = layer(committed, "tpm");
  EXPECT_EQ(number(tpm, "estimate"), 4'000);
  EXPECT_EQ(number(tpm, "actual"), 1'000);
  EXPECT_EQ(number(tpm, "refunded"), 3'000);
  EXPECT_EQ(number(tpm, "remaining"), 5'000);
  // "cost" is the tokens: the request layer keeps its 1.
  const boost::json::object rpm = layer(committed, "rpm");
  EXPECT_EQ(number(rpm, "estimate"), 1);
  EXPECT_EQ(number(rpm, "actual"), 1);
  EXPECT_EQ(number(rpm, "refunded"), 0);
  // Now the third request fits.
  const boost::json::object c = f.reserve(4'000, 200);
  EXPECT_EQ(number(layer(c, "tpm"), "remaining"), 1'000);
  // The second used 9,000, 5,000 above its estimate: charged without a check (debt). The key now
  // counts 1,000 + 9,000 + 4,000 = 14,000 in this window.
  const boost::json::object over = f.post(
      "/v1/commit",
      R"({"reservation":")" + std::string(b.at("reservation").as_string()) + R"(","cost":9000})",
      200);
  EXPECT_EQ(number(layer(over, "tpm"), "charged"), 5'000);
  EXPECT_EQ(number(layer(over, "tpm"), "remaining"), 0);
  // A request of 1 token is denied until the estimate fits (docs/SPEC.md §2, sliding_window): in
  // the next window, prev = 14,000 weighs (P - r)/P, so 1 more fits once
  // 14,000 * (P - r) <= (10,000 - 1) * P, i.e. r >= P - floor(9,999 * P / 14,000).
  const boost::json::object next = f.post("/v1/check", R"({"api_key":"k1","tokens":1})", 429);
  const Micros p = kMicrosPerMinute;
  const Micros wait = p + (p - 9'999 * p / 14'000);
  EXPECT_EQ(number(next, "retry_after_ms"), (wait + 999) / 1000);
  // And it is admitted then, not a millisecond before.
  f.clock->set(kStart + wait - 1'000);
  f.post("/v1/check", R"({"api_key":"k1","tokens":1})", 429);
  f.clock->set(kStart + wait);
  f.post("/v1/check", R"({"api_key":"k1","tokens":1})", 200);
}

TEST(ReservationHttp, SettledOnceAndBadInputChangesNothing) {
  ReservationFixture f;
  const boost::json::object a = f.reserve(500, 200);
  const std::string id(a.at("reservation").as_string());
  const std::string with_id = R"({"reservation":")" + id + R"(")";
  // Bad input: 400 naming the field; the reservation stays open.
  f.post("/v1/commit", with_id + "}", 400);
  f.post("/v1/commit", with_id + R"(,"cost":-1})", 400);
  f.post("/v1/commit", with_id + R"(,"cost":1.5})", 400);
  f.post("/v1/commit", with_id + R"(,"costs":{"nope":3}})", 400);
  f.post("/v1/commit", with_id + R"(,"costs":[1]})", 400);
  f.post("/v1/commit", with_id + R"(,"cost":1,"colour":"red"})", 400);
  f.post("/v1/commit", R"({"cost":1})", 400);
  f.post("/v1/cancel", R"({"reservation":5})", 400);
  f.post("/v1/commit", R"({"reservation":"no-such-id","cost":1})", 404);
  // Cancelled once: the whole estimate comes back; a second cancel or a commit is a 409.
  const boost::json::object cancelled = f.post("/v1/cancel", with_id + "}", 200);
  EXPECT_EQ(cancelled.at("settled").as_string(), "cancel");
  EXPECT_EQ(number(layer(cancelled, "tpm"), "refunded"), 500);
  EXPECT_EQ(number(layer(cancelled, "tpm"), "remaining"), 10'000);
  EXPECT_EQ(number(layer(cancelled, "rpm"), "remaining"), 100);
  const boost::json::object again = f.post("/v1/cancel", with_id + "}", 409);
  EXPECT_NE(std::string(again.at("error").as_string()).find("already settled"), std::string::npos);
  f.post("/v1/commit", with_id + R"(,"cost":1})", 409);
  // Per layer: "costs" names layers; one not in the reservation is a 400 naming it.
  const boost::json::object b = f.reserve(800, 200);
  const std::string b_id(b.at("reservation").as_string());
  const boost::json::object bad = f.post(
      "/v1/commit", R"({"reservation":")" + b_id + R"(","costs":{"tpm":100,"edge":1}})", 400);
  EXPECT_NE(std::string(bad.at("error").as_string()).find("edge"), std::string::npos);
  const boost::json::object ok =
      f.post("/v1/commit", R"({"reservation":")" + b_id + R"(","costs":{"tpm":100,"rpm":0}})", 200);
  EXPECT_EQ(number(layer(ok, "tpm"), "refunded"), 700);
  EXPECT_EQ(number(layer(ok, "rpm"), "refunded"), 1);
  // A reservation left alone expires (10 minutes): its estimate stays charged, and it is gone.
  const boost::json::object c = f.reserve(300, 200);
  f.clock->advance(10 * kMicrosPerMinute);
  f.post("/v1/commit",
         R"({"reservation":")" + std::string(c.at("reservation").as_string()) + R"(","cost":1})",
         404);
}

TEST(ReservationHttp, LimitReservesItsOneKeyAndAnEmptyCostsIsRefused) {
  ReservationFixture f;
  const boost::json::object r =
      f.post("/v1/limit",
             R"({"key":"export-1","limit":100,"period":"1h","algorithm":"fixed_window","cost":40,)"
             R"("reserve":true})",
             200);
  ASSERT_TRUE(r.contains("reservation")) << boost::json::serialize(r);
  EXPECT_EQ(number(r, "remaining"), 60);
  const std::string with_id =
      R"({"reservation":")" + std::string(r.at("reservation").as_string()) + R"(")";
  const boost::json::object empty = f.post("/v1/commit", with_id + R"(,"costs":{}})", 400);
  EXPECT_NE(std::string(empty.at("error").as_string()).find("costs"), std::string::npos);
  f.post("/v1/limit", R"({"key":"k","limit":1,"period":"1h","reserve":"yes"})", 400);
  // Its one layer is "limit", and "cost" (no metered layer) is its actual cost.
  const boost::json::object done = f.post("/v1/commit", with_id + R"(,"cost":25})", 200);
  EXPECT_EQ(number(layer(done, "limit"), "refunded"), 15);
  EXPECT_EQ(number(layer(done, "limit"), "remaining"), 75);
}

TEST(ReservationHttp, MetricsCountReservationsAndUnits) {
  ReservationFixture f;
  const boost::json::object a = f.reserve(1'000, 200);
  f.post("/v1/commit",
         R"({"reservation":")" + std::string(a.at("reservation").as_string()) + R"(","cost":400})",
         200);
  const boost::json::object b = f.reserve(100, 200);
  f.post("/v1/commit",
         R"({"reservation":")" + std::string(b.at("reservation").as_string()) + R"(","cost":150})",
         200);
  const HttpReply metrics = http(f.service.port(), "GET", "/metrics", "");
  for (const char* line : {"spillway_reservations_total{event=\"reserved\"} 2",
                           "spillway_reservations_total{event=\"committed\"} 2",
                           "spillway_settled_units_total{layer=\"tpm\",kind=\"refunded\"} 600",
                           "spillway_settled_units_total{layer=\"tpm\",kind=\"debt\"} 50"}) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
}

// A store at a small cap (server.max_reservations, issue 32): 4 connections flood it with
// reserves while a fifth one checks. Each refused reserve is a 503 "allowed": false that names
// the full store and charges nothing, under the default on_error (allow): never admitted
// uncharged. The checks on the fifth connection are answered, each exactly.
TEST(ReservationHttp, AFullStoreRefusesReservesWhileAnotherConnectionsChecksAreAnswered) {
  constexpr int kReservationHttpFloodCap = 8;
  auto clock = std::make_shared<ManualClock>(kStart);
  testing::RunningService service = testing::start_service(
      reservation_llm_config(), std::make_unique<MemoryStore>(MemoryStoreOptions{
                                    .max_reservations = kReservationHttpFloodCap, .clock = clock}));
  ASSERT_NE(service.port(), 0);
  const auto reserve_body = [](const std::string& key) {
    return R"({"api_key":")" + key + R"(","reserve":true,"tokens":5})";
  };
  for (int i = 0; i < kReservationHttpFloodCap; ++i) {
    const HttpReply made = http(service.port(), "POST", "/v1/check", reserve_body("fill"));
    ASSERT_EQ(made.status, 200) << made.body;
    ASSERT_NE(made.body.find("\"reservation\""), std::string::npos) << made.body;
  }
  // A generous deadline per reply: a hang fails instead of stalling the suite.
  const auto with_deadline = [](testing::HttpConnection& connection) {
    const timeval deadline{.tv_sec = 60, .tv_usec = 0};
    ::setsockopt(connection.fd(), SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  };
  std::atomic<bool> flooding{true};
  std::atomic<int> refused{0};
  std::vector<std::string> wrong[4];
  {
    std::vector<std::jthread> flood;
    for (int t = 0; t < 4; ++t) {
      flood.emplace_back([&, t] {
        try {
          testing::HttpConnection connection(service.port());
          with_deadline(connection);
          for (int i = 0; flooding.load() || i < 50; ++i) {
            const HttpReply r =
                connection.request("POST", "/v1/check", reserve_body("flood-" + std::to_string(t)));
            if (r.status != 503 || r.body.find("\"allowed\":false") == std::string::npos ||
                r.body.find("\"reservation\"") != std::string::npos ||
                r.body.find("reservation store is full") == std::string::npos ||
                r.header("x-spillway-backend-error") != "store_full") {
              wrong[t].push_back(std::to_string(r.status) + " " + r.body);
              if (r.status == 0) return;
            }
            ++refused;
            if (i >= 100'000) return;
          }
        } catch (const std::exception& e) {
          wrong[t].push_back(e.what());
        }
      });
    }
    testing::HttpConnection checker(service.port());
    with_deadline(checker);
    for (int i = 0; i < 40; ++i) {
      const HttpReply r =
          checker.request("POST", "/v1/check", R"({"api_key":"checker","tokens":10})");
      EXPECT_EQ(r.status, 200) << i << ": " << r.body;
      EXPECT_NE(r.body.find("\"remaining\":" + std::to_string(100 - 1 - i) + ",\"retry_after_ms\""),
                std::string::npos)
          << i << ": " << r.body;
    }
    flooding = false;
  }
  for (const std::vector<std::string>& answers : wrong) {
    EXPECT_TRUE(answers.empty()) << answers.size() << " wrong answers, first: " << answers.front();
  }
  EXPECT_GE(refused.load(), 4 * 50);
  // The refused reserves charged nothing; /v1/limit's reserve is refused the same way.
  const HttpReply flood_key =
      http(service.port(), "POST", "/v1/check", R"({"api_key":"flood-0","tokens":0})");
  EXPECT_NE(flood_key.body.find("\"remaining\":99,"), std::string::npos) << flood_key.body;
  const HttpReply limit = http(service.port(), "POST", "/v1/limit",
                               R"({"key":"export","limit":10,"period":"1h","reserve":true})");
  EXPECT_EQ(limit.status, 503) << limit.body;
  EXPECT_NE(limit.body.find("\"allowed\":false"), std::string::npos) << limit.body;
  EXPECT_NE(
      http(service.port(), "POST", "/v1/limit", R"({"key":"export","limit":10,"period":"1h"})")
          .body.find("\"remaining\":9,"),
      std::string::npos);
  const HttpReply metrics = http(service.port(), "GET", "/metrics", "");
  EXPECT_NE(metrics.body.find("spillway_reservations_open 8"), std::string::npos) << metrics.body;
}

// `spillway serve` takes its cap from the config (server.max_reservations: 2): the third open
// reservation is refused with a 503 under the default on_error (allow), a settled one frees its
// place, and the metric says what counts. (A `Serve` test: the binary, label cli.)
TEST(Serve, MaxReservationsFromTheConfigBoundsOpenReservations) {
  const std::string stem =
      "/tmp/spillway_reservation_cap_" + std::to_string(::getpid()) + "_" + "serve";
  std::ofstream(stem + ".yaml") << "server:\n  access_log: off\n  max_reservations: 2\n"
                                   "layers:\n  - name: tpm\n    key: [api_key]\n"
                                   "    algorithm: fixed_window\n    cost: tokens\n"
                                   "    limit: 1000/hour\n";
  testing::ServeProcess serve({"--config", stem + ".yaml"}, stem + ".log");
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::string body = R"({"api_key":"capped","tokens":10,"reserve":true})";
  const HttpReply first = http(serve.port(), "POST", "/v1/check", body);
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(http(serve.port(), "POST", "/v1/check", body).status, 200);
  const HttpReply third = http(serve.port(), "POST", "/v1/check", body);
  EXPECT_EQ(third.status, 503) << third.body;
  EXPECT_NE(third.body.find("\"allowed\":false"), std::string::npos) << third.body;
  EXPECT_NE(third.body.find("maximum of 2 open reservations"), std::string::npos) << third.body;
  boost::system::error_code ec;
  const boost::json::value made = boost::json::parse(first.body, ec);
  ASSERT_FALSE(ec) << first.body;
  const std::string id(made.at("reservation").as_string());
  ASSERT_EQ(http(serve.port(), "POST", "/v1/commit", R"({"reservation":")" + id + R"(","cost":3})")
                .status,
            200);
  EXPECT_EQ(http(serve.port(), "POST", "/v1/check", body).status, 200) << "a settled one counts";
  const HttpReply metrics = http(serve.port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("spillway_reservations_open 2"), std::string::npos) << metrics.body;
  // 3 admitted reserves of 10 tokens (one committed at 3): 1000 - 23 left.
  EXPECT_NE(http(serve.port(), "POST", "/v1/check", R"({"api_key":"capped","tokens":0})")
                .body.find("\"remaining\":977,"),
            std::string::npos);
  std::remove((stem + ".yaml").c_str());
  std::remove((stem + ".log").c_str());
}

}  // namespace
}  // namespace spillway::server
