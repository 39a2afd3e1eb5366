// A real Prometheus (Debian's /usr/bin/prometheus, on a free loopback port) scrapes a real
// `spillway serve --config examples/config/saas-plans.yaml` every second with
// examples/prometheus/spillway-alerts.yml loaded; after a few requests its HTTP API gives back
// spillway_requests_total with the counts and labels spillway served, and every alert rule
// evaluates without an error. If prometheus is missing or cannot start, the test fails with its
// log. Time bounds: 30 s for Prometheus to be ready, 30 s for the series to arrive.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace spillway {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = SPILLWAY_SOURCE_DIR;

using Child = testing::ChildProcess;

// Waits up to `seconds` for `condition` (tests/support/poll.h).
bool eventually(int seconds, const std::function<bool()>& condition) {
  return testing::wait_until(condition, std::chrono::seconds(seconds));
}

// GET http://127.0.0.1:PORT/PATH with curl (the HTTP API answers chunked), `query` URL-encoded.
std::string api(std::uint16_t port, const std::string& path, const std::string& query = "") {
  std::string command =
      "curl -sS --max-time 5 -G 'http://127.0.0.1:" + std::to_string(port) + path + "'";
  if (!query.empty()) command += " --data-urlencode 'query=" + query + "'";
  return testing::run_command(command + " 2>&1").out;
}

std::size_t count_in(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(PrometheusScrape, ARealPrometheusScrapesSpillwayAndQueriesTheSeriesBack) {
  const std::string prometheus = "/usr/bin/prometheus";
  ASSERT_TRUE(fs::exists(prometheus))
      << prometheus << " not found: install Debian's prometheus (scripts/setup.sh)";
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("prometheus_scrape_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");

  // spillway, with the SaaS example as written (its listen address replaced by a free port).
  testing::ServeProcess spillway(
      {"--config", (kSourceDir / "examples/config/saas-plans.yaml").string()},
      (dir / "spillway.log").string());
  ASSERT_TRUE(spillway.ready()) << spillway.log();
  const std::string target = "127.0.0.1:" + std::to_string(spillway.port());

  // Requests: 3 admitted, 1 bad (an attribute no layer reads).
  for (int i = 1; i <= 3; ++i) {
    const std::string body = R"({"ip":"203.0.113.)" + std::to_string(i) +
                             R"(","api_key":"demo-pro-key","endpoint":"/search","method":"GET"})";
    ASSERT_EQ(testing::http(spillway.port(), "POST", "/v1/check", body).status, 200) << body;
  }
  ASSERT_EQ(testing::http(spillway.port(), "POST", "/v1/check", R"({"endpont":"/search"})").status,
            400);

  // Prometheus: scrape spillway every second, evaluate the example's alert rules every second.
  const std::uint16_t port = testing::free_port();
  std::ofstream(dir / "prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: ['" << (kSourceDir / "examples/prometheus/spillway-alerts.yml").string()
      << "']\n"
      << "scrape_configs:\n"
      << "  - job_name: spillway\n"
      << "    static_configs: [{targets: ['" << target << "']}]\n";
  Child server({prometheus, "--config.file=" + (dir / "prometheus.yml").string(),
                "--storage.tsdb.path=" + (dir / "data").string(),
                "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"},
               (dir / "prometheus.log").string());
  ASSERT_TRUE(eventually(30,
                         [&] {
                           return !server.running() ||
                                  api(port, "/-/ready").find("Ready") != std::string::npos;
                         }))
      << "prometheus not ready in 30 s:\n"
      << server.log();
  ASSERT_TRUE(server.running()) << "prometheus exited:\n" << server.log();

  // The admitted requests' series, with the scrape's labels and spillway's.
  const std::string admitted = R"(spillway_requests_total{endpoint="/v1/check",status="200"})";
  std::string answer;
  EXPECT_TRUE(eventually(30,
                         [&] {
                           answer = api(port, "/api/v1/query", admitted);
                           return answer.find(R"(,"3"])") != std::string::npos;
                         }))
      << "no value 3 for " << admitted << " in 30 s; last answer: " << answer << "\n"
      << server.log();
  EXPECT_NE(answer.find(R"("status":"success")"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"("job":"spillway")"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"("instance":")" + target + "\""), std::string::npos) << answer;
  EXPECT_EQ(count_in(answer, R"("__name__":"spillway_requests_total")"), 1u) << answer;

  // The bad request's series, and the backend's state.
  const std::string bad =
      api(port, "/api/v1/query", R"(spillway_requests_total{endpoint="/v1/check",status="400"})");
  EXPECT_NE(bad.find(R"(,"1"])"), std::string::npos) << bad;
  const std::string backend = api(port, "/api/v1/query", "spillway_backend_status");
  EXPECT_NE(backend.find(R"("status":"ready")"), std::string::npos) << backend;
  EXPECT_NE(backend.find(R"(,"1"])"), std::string::npos) << backend;

  // Every alert rule loaded and evaluated without an error; none fires on this healthy server.
  std::string rules;
  EXPECT_TRUE(eventually(30, [&] {
    rules = api(port, "/api/v1/rules");
    return count_in(rules, R"("health":"ok")") == 7;
  })) << rules;
  EXPECT_EQ(count_in(rules, R"("health":"err")"), 0u) << rules;
  for (const char* alert : {"SpillwayDown", "SpillwayBackendDown", "SpillwayBackendErrors",
                            "SpillwayErrorAnswers", "SpillwayRateLimitServiceErrors",
                            "SpillwayShadowDenialsRising", "SpillwayHoldsNotReleased"}) {
    EXPECT_NE(rules.find(std::string(R"("name":")") + alert + "\""), std::string::npos) << alert;
  }
  const std::string alerts = api(port, "/api/v1/alerts");
  EXPECT_NE(alerts.find(R"("alerts":[])"), std::string::npos) << alerts;

  fs::remove_all(dir);
}

}  // namespace
}  // namespace spillway
