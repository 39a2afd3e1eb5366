// Two spillway servers sharing one Redis admit exactly the limit between them; and Redis killed
// under sustained load through a server: no failed exchange, on_error honoured, and decisions
// again once Redis is back.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace spillway {
namespace {

std::string shared_temp(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
}

TEST(SharedRedis, TwoServersAdmitExactlyTheLimitTogether) {
  testing::RedisServer redis;
  testing::ServeProcess a({"--backend", redis.url()}, shared_temp("serve_a.log"));
  testing::ServeProcess b({"--backend", redis.url()}, shared_temp("serve_b.log"));
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  std::atomic<int> admitted{0}, failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      testing::HttpConnection connection(t % 2 ? a.port() : b.port());
      for (int i = 0; i < 60; ++i) {
        const int status =
            connection.request("POST", "/v1/limit", R"({"key":"shared","limit":150,"period":"1h"})")
                .status;
        if (status == 200)
          ++admitted;
        else if (status != 429)
          ++failed;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(admitted.load(), 150) << "two servers over one Redis must admit exactly the limit";
  EXPECT_EQ(a.stop(SIGTERM), 0);
  EXPECT_EQ(b.stop(SIGTERM), 0);
}

TEST(SharedRedis, RedisKilledUnderLoadFollowsOnErrorAndRecovers) {
  testing::RedisServer redis;
  const std::string config = shared_temp("on_error_allow.yaml");
  std::ofstream(config) << "backend:\n  timeout: 100ms\n  on_error: allow\n";
  testing::ServeProcess server({"--config", config, "--backend", redis.url()},
                               shared_temp("serve_kill.log"));
  ASSERT_TRUE(server.ready()) << server.log();

  std::atomic<bool> stop{false};
  std::atomic<int> decided{0}, failed_open{0}, broken{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      testing::HttpConnection connection(server.port());
      for (int i = 0; !stop; ++i) {
        const testing::HttpReply r = connection.request(
            "POST", "/v1/limit",
            R"({"key":"load-)" + std::to_string(t) + R"(","limit":1000000,"period":"1h"})");
        if (r.status == 200 && r.body.find("backend_error") != std::string::npos) {
          ++failed_open;
        } else if (r.status == 200) {
          ++decided;
        } else {
          ++broken;  // neither a decision nor on_error: allow
        }
      }
    });
  }
  // Load first (the threads and a sanitized server can be slow to start), then the kill.
  testing::wait_until([&] { return decided.load() > 50; });
  const int before = decided.load();
  redis.stop();
  // The outage lasts until requests have met it (on_error's answers), however slow the build.
  testing::wait_until([&] { return failed_open.load() > 50; }, std::chrono::seconds(10));
  const int during = failed_open.load();
  redis.start();
  const int decided_at_restart = decided.load();
  const bool recovered =
      testing::wait_until([&] { return decided.load() > decided_at_restart + 50; });
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_GT(before, 50) << "no load before the kill";
  EXPECT_GT(during, 0) << "no request met the outage";
  EXPECT_EQ(broken.load(), 0) << "a request got neither a decision nor on_error's answer";
  EXPECT_TRUE(recovered) << "decisions did not come back after Redis returned";
  EXPECT_EQ(server.stop(SIGTERM), 0) << server.log();
}

}  // namespace
}  // namespace spillway
