// The distributed race of issue 22, for usage-based limits (docs/SPEC.md §5.3): four `spillway
// serve` processes share one redis-server and one policy, a tokens layer (`cost: tokens`, 10,000
// tokens a period), and 32 clients (8 per process) reserve estimates on one API key through their
// own process, then commit a random actual cost at most the estimate (or cancel) through a random
// one of the four, and now and then settle it a second time, for a bounded count and time. The
// reservation lives in Redis, so whichever process settles it, it is settled exactly once, and a
// refund never gives back more than the actual cost leaves (§2.1).
//
// Times: on Redis the store decides at Redis' TIME, on this machine the clock the client reads
// (system_clock); a decision's time lies between the client's send and the answer it read. Every
// bound counts only the reservations whose whole interval lies in one window (the others could be
// in either), so no bound can fail on timing alone:
//   - fixed_window (§2): in every window w of the period, Σ actual ≤ L. Without debt (actual ≤
//     estimate here) the count n of w never exceeds L, and each refund gives back at most its own
//     reservation's estimate − actual, so n ≥ Σ actual of w's reservations.
//   - sliding_window (§2): the same per window (cur ≤ L); and at every admission j, at offset r of
//     its window w: prev · (P − r) + (cur + actual_j) · P ≤ L · P, with prev the Σ actual of
//     window w − 1 and cur the Σ actual of w's reservations answered before j was sent (each at
//     most the count the admission saw), and r at its largest (j's answer).
//   - refunds (§2.1): settled in the reservation's window (fixed_window), or in it or the next
//     (sliding_window), exactly estimate − actual comes back; settled later, nothing.
//   - a test that stays inside one window: at the end the key holds exactly Σ actual.
// What shows the test can fail: most reserves are denied (the limit was reached), and in some
// window more than L of estimates were admitted (refunds made room that was used again).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr int kReservationProcesses = 4;
constexpr int kReservationThreadsPerProcess = 8;
constexpr int kMaxReservesPerThread = 400;
constexpr auto kReservationTraffic = 2500ms;
constexpr std::int64_t kReservationLimit = 10'000;
constexpr std::int64_t kReservationSecond = 1'000'000;  // µs
constexpr std::int64_t kMinute = 60 * kReservationSecond;
constexpr std::size_t kProblemsKept = 5;  // per client thread

std::string reservation_race_temp(const std::string& name) {
  return "/tmp/spillway_reservation_race_" + std::to_string(::getpid()) + "_" + name;
}

// µs since the Unix epoch, rounded down (the clock Redis' TIME reads).
std::int64_t reservation_race_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t window_of(std::int64_t t, std::int64_t period) { return t / period; }

std::optional<json::object> object_of(const std::string& body) {
  json::error_code ec;
  json::value value = json::parse(body, ec);
  if (ec || !value.is_object()) return std::nullopt;
  return value.as_object();
}

// The layer `name` of an answer's "layers", if there is one.
std::optional<json::object> layer_of(const json::object& answer, std::string_view name) {
  const json::value* layers = answer.if_contains("layers");
  if (layers == nullptr || !layers->is_array()) return std::nullopt;
  for (const json::value& l : layers->as_array()) {
    if (!l.is_object()) continue;
    const json::value* n = l.as_object().if_contains("name");
    if (n != nullptr && n->is_string() && n->as_string() == name) return l.as_object();
  }
  return std::nullopt;
}

// A whole number field, or nullopt.
std::optional<std::int64_t> number_of(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  json::error_code ec;
  const auto n = v->to_number<std::int64_t>(ec);
  if (ec) return std::nullopt;
  return n;
}

std::string string_of(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// One admitted reservation: when it was reserved and settled (the client's send and answer, µs),
// its estimate, the actual cost sent (0 for a cancel) and what the settlement's answer said.
struct Admitted {
  std::int64_t reserve_sent = 0, reserve_answered = 0;
  std::int64_t settle_sent = 0, settle_answered = 0;
  std::int64_t estimate = 0, actual = 0;
  bool cancel = false;
  bool settled = false;        // the first settlement answered 200 with this reservation's layer
  std::int64_t refunded = -1;  // its "refunded" (tpm), when settled
  std::string id;
};

// What one client thread saw.
struct ReservationTally {
  std::vector<Admitted> admitted;
  int reserves = 0, denied = 0;
  int settles = 0, settled_200 = 0;  // first settlements sent, and answered 200
  int again = 0, again_409 = 0;      // second settlements sent, and answered 409
  int server_errors = 0;             // 5xx, no answer, a backend error, or a lost connection
  int unexpected = 0;                // any other answer that the contract does not allow
  std::vector<std::string> problems;
  void problem(const std::string& what) {
    if (problems.size() < kProblemsKept) problems.push_back(what);
  }
  // A status that is neither what was expected nor allowed: counted and kept for the message.
  void wrong(const std::string& what, const testing::HttpReply& reply) {
    if (reply.status == 0 || reply.status >= 500) {
      ++server_errors;
    } else {
      ++unexpected;
    }
    problem(what + " -> " + std::to_string(reply.status) + " " + reply.body);
  }
};

// One client: reserves through process `home`, settles through a random one.
void reservation_client(const std::vector<std::uint16_t>& ports, int home, std::uint64_t seed,
                        const std::string& api_key, std::chrono::steady_clock::time_point stop_at,
                        ReservationTally& tally) {
  // Opened on first use: the server closes a fresh connection that sends nothing for 5 s.
  std::vector<std::unique_ptr<testing::HttpConnection>> connections(ports.size());
  const auto post = [&](std::size_t process, const std::string& path, const std::string& body) {
    if (!connections[process]) {
      connections[process] = std::make_unique<testing::HttpConnection>(ports[process]);
    }
    return connections[process]->request("POST", path, body);
  };
  std::mt19937_64 random(seed);
  const auto uniform = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  const auto any_process = [&] {
    return static_cast<std::size_t>(uniform(0, kReservationProcesses - 1));
  };
  try {
    for (int i = 0; i < kMaxReservesPerThread && std::chrono::steady_clock::now() < stop_at; ++i) {
      Admitted a;
      a.estimate = uniform(200, 3'000);
      const std::string reserve = R"({"api_key":")" + api_key + R"(","reserve":true,"tokens":)" +
                                  std::to_string(a.estimate) + "}";
      a.reserve_sent = reservation_race_now_us();
      const testing::HttpReply reply = post(static_cast<std::size_t>(home), "/v1/check", reserve);
      a.reserve_answered = reservation_race_now_us() + 1;
      ++tally.reserves;
      if (reply.status == 429) {
        ++tally.denied;
        if (reply.body.find("\"reservation\"") != std::string::npos) {
          ++tally.unexpected;
          tally.problem("a denied reserve made a reservation: " + reply.body);
        }
        continue;
      }
      if (reply.status != 200) {
        tally.wrong("reserve " + reserve, reply);
        continue;
      }
      const std::optional<json::object> answer = object_of(reply.body);
      if (!answer || answer->contains("backend_error")) {
        ++tally.server_errors;
        tally.problem("reserve answered 200 without a decision: " + reply.body);
        continue;
      }
      a.id = string_of(*answer, "reservation");
      if (a.id.empty()) {
        ++tally.unexpected;
        tally.problem("an admitted reserve without a reservation: " + reply.body);
        continue;
      }
      // The work: mostly short, now and then long enough to meet another window. Real time: the
      // servers' windows follow their own clocks.
      std::this_thread::sleep_for(uniform(0, 15) == 0 ? std::chrono::milliseconds(uniform(50, 250))
                                                      : std::chrono::milliseconds(uniform(0, 3)));
      // Mostly far below the estimate (an LLM's max_tokens is seldom used up), sometimes all of
      // it, sometimes nothing (cancelled).
      const std::int64_t use = uniform(0, 15);
      a.cancel = use < 2;
      a.actual = a.cancel ? 0 : use == 2 ? a.estimate : uniform(0, a.estimate / 4);
      const std::string with_id = R"({"reservation":")" + a.id + R"(")";
      const std::string path = a.cancel ? "/v1/cancel" : "/v1/commit";
      const std::string settle =
          a.cancel ? with_id + "}" : with_id + R"(,"cost":)" + std::to_string(a.actual) + "}";
      a.settle_sent = reservation_race_now_us();
      const testing::HttpReply settled = post(any_process(), path, settle);
      a.settle_answered = reservation_race_now_us() + 1;
      ++tally.settles;
      if (settled.status == 200) {
        const std::optional<json::object> done = object_of(settled.body);
        const std::optional<json::object> tpm =
            done ? layer_of(*done, "tpm") : std::optional<json::object>();
        if (!tpm || string_of(*done, "reservation") != a.id ||
            string_of(*done, "settled") != (a.cancel ? "cancel" : "commit") ||
            number_of(*tpm, "estimate") != a.estimate || number_of(*tpm, "actual") != a.actual ||
            number_of(*tpm, "charged") != 0 || !number_of(*tpm, "refunded")) {
          ++tally.unexpected;
          tally.problem(path + " " + settle + " (estimate " + std::to_string(a.estimate) +
                        ") answered " + settled.body);
        } else {
          ++tally.settled_200;
          a.settled = true;
          a.refunded = *number_of(*tpm, "refunded");
        }
      } else {
        tally.wrong(path + " " + settle, settled);
      }
      // Exactly once: a second commit or cancel, through any process, is a 409.
      if (uniform(0, 3) == 0) {
        const bool cancel_again = uniform(0, 1) == 0;
        const testing::HttpReply again =
            post(any_process(), cancel_again ? "/v1/cancel" : "/v1/commit",
                 cancel_again ? with_id + "}" : with_id + R"(,"cost":1})");
        ++tally.again;
        if (again.status == 409) {
          ++tally.again_409;
        } else {
          tally.wrong(std::string("a second ") + (cancel_again ? "cancel" : "commit") + " of " +
                          a.id + " after " + path,
                      again);
        }
      }
      tally.admitted.push_back(std::move(a));
    }
  } catch (const std::exception& e) {
    ++tally.server_errors;
    tally.problem(std::string("the client stopped: ") + e.what());
  }
}

struct Window {
  std::int64_t actual = 0, estimate = 0;
  int reservations = 0;
};

void race(const std::string& name, const std::string& algorithm, const std::string& rate,
          std::int64_t period) {
  const bool sliding = algorithm == "sliding_window";
  testing::RedisServer redis;
  const std::string config = reservation_race_temp(name + ".yaml");
  std::ofstream(config) << "server:\n  access_log: off\n  reservation_ttl: 1m\n"
                        << "backend:\n  url: " << redis.url()
                        << "\n  timeout: 2s\n  on_error: deny\n"
                        << "layers:\n  - name: tpm\n    key: [api_key]\n    algorithm: "
                        << algorithm << "\n    cost: tokens\n    limit: " << rate << "\n";
  std::vector<std::unique_ptr<testing::ServeProcess>> servers;
  for (int p = 0; p < kReservationProcesses; ++p) {
    servers.push_back(std::make_unique<testing::ServeProcess>(
        std::vector<std::string>{"--config", config},
        reservation_race_temp(name + "_" + std::to_string(p) + ".log")));
  }
  std::vector<std::uint16_t> ports;
  for (const auto& server : servers) {
    ASSERT_TRUE(server->ready()) << server->log();
    ports.push_back(server->port());
  }

  const std::string api_key = "sk-race-" + name;
  std::vector<ReservationTally> tallies(kReservationProcesses * kReservationThreadsPerProcess);
  const std::int64_t began = reservation_race_now_us();
  const auto stop_at = std::chrono::steady_clock::now() + kReservationTraffic;
  std::vector<std::thread> clients;
  for (std::size_t t = 0; t < tallies.size(); ++t) {
    clients.emplace_back(reservation_client, std::cref(ports),
                         static_cast<int>(t % kReservationProcesses), 22 + t, std::cref(api_key),
                         stop_at, std::ref(tallies[t]));
  }
  for (std::thread& c : clients) c.join();

  ReservationTally all;
  for (ReservationTally& t : tallies) {
    all.reserves += t.reserves;
    all.denied += t.denied;
    all.settles += t.settles;
    all.settled_200 += t.settled_200;
    all.again += t.again;
    all.again_409 += t.again_409;
    all.server_errors += t.server_errors;
    all.unexpected += t.unexpected;
    for (std::string& p : t.problems) all.problems.push_back(std::move(p));
    for (Admitted& a : t.admitted) all.admitted.push_back(std::move(a));
  }
  std::string problems;
  for (std::size_t i = 0; i < all.problems.size() && i < 10; ++i) {
    problems += "\n  " + all.problems[i];
  }
  std::printf("%s: %d reserves, %d denied, %zu admitted, %d settled, %d second settlements\n",
              name.c_str(), all.reserves, all.denied, all.admitted.size(), all.settled_200,
              all.again);

  // No 5xx, nothing the contract does not allow; every settlement once, the second a 409.
  EXPECT_EQ(all.server_errors, 0) << problems;
  EXPECT_EQ(all.unexpected, 0) << problems;
  EXPECT_EQ(all.settled_200, all.settles) << problems;
  EXPECT_EQ(all.again_409, all.again) << problems;
  std::set<std::string> ids;
  for (const Admitted& a : all.admitted) ids.insert(a.id);
  EXPECT_EQ(ids.size(), all.admitted.size()) << "a reservation id was given twice";

  // The reservations that surely lie in one window, by window.
  std::map<std::int64_t, Window> windows;
  std::vector<const Admitted*> placed;
  for (const Admitted& a : all.admitted) {
    const std::int64_t w = window_of(a.reserve_sent, period);
    if (w != window_of(a.reserve_answered, period)) continue;
    Window& window = windows[w];
    window.actual += a.actual;
    window.estimate += a.estimate;
    ++window.reservations;
    placed.push_back(&a);
  }
  std::int64_t most_estimated = 0;
  for (const auto& [w, window] : windows) {
    EXPECT_LE(window.actual, kReservationLimit)
        << "window " << w << " of " << period << " µs admitted " << window.actual
        << " actual tokens in " << window.reservations << " reservations";
    most_estimated = std::max(most_estimated, window.estimate);
  }

  if (sliding) {
    int over = 0;
    std::string first_over;
    for (const Admitted* j : placed) {
      const std::int64_t w = window_of(j->reserve_sent, period);
      const std::int64_t r = j->reserve_answered - w * period;  // at its largest
      const auto previous = windows.find(w - 1);
      const std::int64_t prev = previous == windows.end() ? 0 : previous->second.actual;
      std::int64_t cur = j->actual;
      for (const Admitted* i : placed) {
        if (i != j && window_of(i->reserve_sent, period) == w &&
            i->reserve_answered < j->reserve_sent) {
          cur += i->actual;
        }
      }
      if (prev * (period - r) + cur * period > kReservationLimit * period) {
        if (++over == 1) {
          first_over = "at offset " + std::to_string(r) + " µs of window " + std::to_string(w) +
                       ": prev " + std::to_string(prev) + ", cur " + std::to_string(cur);
        }
      }
    }
    EXPECT_EQ(over, 0) << "admissions above the sliding window's estimate, first " << first_over;
  }

  // Refunds: exact while the reservation's window still counts, nothing after.
  int wrong_refunds = 0, refunds = 0;
  std::string first_wrong;
  for (const Admitted* a : placed) {
    if (!a->settled) continue;
    refunds += a->refunded > 0;
    const std::int64_t settled_in = window_of(a->settle_sent, period);
    if (settled_in != window_of(a->settle_answered, period)) continue;
    const std::int64_t later = settled_in - window_of(a->reserve_sent, period);
    const std::int64_t expected = later <= (sliding ? 1 : 0) ? a->estimate - a->actual : 0;
    if (a->refunded != expected && ++wrong_refunds == 1) {
      first_wrong = a->id + ": estimate " + std::to_string(a->estimate) + ", actual " +
                    std::to_string(a->actual) + ", settled " + std::to_string(later) +
                    " windows later, refunded " + std::to_string(a->refunded) + ", expected " +
                    std::to_string(expected);
    }
  }
  EXPECT_EQ(wrong_refunds, 0) << "first " << first_wrong;

  // Inside one window (the key was new at `began`), the key now holds exactly what was used.
  std::int64_t used = 0;
  for (const Admitted& a : all.admitted) used += a.actual;
  for (std::size_t p = 0; p < ports.size(); ++p) {
    const testing::HttpReply peek = testing::http(ports[p], "POST", "/v1/check",
                                                  R"({"api_key":")" + api_key + R"(","tokens":0})");
    const std::int64_t ended = reservation_race_now_us() + 1;
    ASSERT_EQ(peek.status, 200) << peek.body;
    const std::optional<json::object> answer = object_of(peek.body);
    const std::optional<json::object> tpm = answer ? layer_of(*answer, "tpm") : std::nullopt;
    ASSERT_TRUE(tpm) << peek.body;
    if (window_of(began, period) == window_of(ended, period)) {
      EXPECT_EQ(number_of(*tpm, "remaining").value_or(-1), kReservationLimit - used)
          << "through process " << p;
    } else if (p == 0) {
      std::printf("%s: the traffic crossed a window's edge, the final count is not checked\n",
                  name.c_str());
    }
  }

  // The test can fail: the limit was reached (most reserves denied), and refunds made room that
  // was used again (more than the limit of estimates admitted in one window).
  EXPECT_GT(all.denied * 2, all.reserves) << "the limit was hardly reached";
  EXPECT_GT(most_estimated, kReservationLimit)
      << "no window admitted more than its limit of estimates";
  EXPECT_GT(refunds, 0) << "no refund";
  EXPECT_GE(all.admitted.size(), 5u);

  for (const auto& server : servers) EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
  std::remove(config.c_str());
}

TEST(ReservationRace, FixedWindowTokensPerMinuteAcrossFourServers) {
  race("fixed_minute", "fixed_window", "10000/min", kMinute);
}

TEST(ReservationRace, FixedWindowTokensPerSecondAcrossFourServers) {
  race("fixed_second", "fixed_window", "10000/s", kReservationSecond);
}

TEST(ReservationRace, SlidingWindowTokensPerSecondAcrossFourServers) {
  race("sliding_second", "sliding_window", "10000/s", kReservationSecond);
}

}  // namespace
}  // namespace spillway
