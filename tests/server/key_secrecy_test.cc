// Callers' secrets stay out of Redis and out of every output (backend.key_hash): with the default
// config, a run of `spillway serve` on a real Redis leaves no API key and no IP address in any key
// name, in what MONITOR saw, in /v1/stats, /metrics, the dashboard or the server's log; `spillway
// inspect` finds the digested keys from the attributes and reads their state; an HMAC secret
// changes every name; key_hash: none keeps the readable names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/poll.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/text_lines.h"

namespace spillway {
namespace {

using testing::RedisServer;

std::string temp(const std::string& name) {
  return "/tmp/spillway_key_secrecy_" + std::to_string(::getpid()) + "_" + name;
}

// An API key no other test or process uses.
std::string fresh_api_key() {
  std::random_device random;
  std::ostringstream out;
  out << "sk-live-" << std::hex << random() << random() << random();
  return out.str();
}

using testing::lines_of;

// The value after "  <label> " on each line of inspect's output that has it.
std::vector<std::string> field_lines(const std::string& out, const std::string& label) {
  std::vector<std::string> values;
  for (const std::string& line : lines_of(out)) {
    const std::string start = "  " + label;
    if (!line.starts_with(start)) continue;
    const std::size_t value = line.find_first_not_of(' ', start.size());
    values.push_back(value == std::string::npos ? "" : line.substr(value));
  }
  return values;
}

constexpr const char* kIp = "203.0.113.77";

// Twelve /v1/check requests of one caller on /search (limit 10 a minute): two are denied, so the
// caller is among /v1/stats' top denied; one /v1/auth request with the key in X-Api-Key; one
// /v1/limit request keyed by the API key itself.
void send_traffic(std::uint16_t port, const std::string& api_key) {
  const std::string body =
      std::string(R"({"ip":")") + kIp + R"(","api_key":")" + api_key + R"(","endpoint":"/search"})";
  int denied = 0;
  for (int i = 0; i < 12; ++i)
    denied += testing::http(port, "POST", "/v1/check", body).status == 429;
  EXPECT_EQ(denied, 2);
  const testing::HttpReply auth = testing::http(
      port, "GET", "/v1/auth", "", {{"X-Api-Key", api_key}, {"X-Original-URI", "/export"}});
  EXPECT_EQ(auth.status, 204) << auth.body;
  const testing::HttpReply limit = testing::http(
      port, "POST", "/v1/limit", R"({"key":")" + api_key + R"(","limit":5,"period":"1m"})");
  EXPECT_EQ(limit.status, 200) << limit.body;
}

TEST(KeySecrecy, NoApiKeyOrAddressInRedisOrAnyOutputByDefault) {
  RedisServer redis;
  const std::string api_key = fresh_api_key();
  // MONITOR: every command Redis receives, with its arguments.
  testing::ChildProcess monitor(
      {"/usr/bin/redis-cli", "-p", std::to_string(redis.port()), "monitor"}, temp("monitor.log"));
  ASSERT_TRUE(testing::wait_until([&] { return monitor.log().find("OK") != std::string::npos; }))
      << monitor.log();
  const std::string config = temp("default.yaml");
  std::ofstream(config) << "server:\n  access_log: on\n";
  testing::ServeProcess serve({"--config", config, "--backend", redis.url()}, temp("serve.log"));
  ASSERT_TRUE(serve.ready()) << serve.log();
  send_traffic(serve.port(), api_key);

  const std::vector<std::string> keys = lines_of(redis.cli("--scan"));
  // edge, gateway, endpoint (/search and /export) and /v1/limit: five keys at least.
  ASSERT_GE(keys.size(), 5u) << redis.cli("--scan");
  for (const std::string& key : keys) {
    EXPECT_TRUE(key.starts_with("spillway:{") && key.ends_with("}") &&
                key.size() == std::string("spillway:{}").size() + 22)
        << key;
  }
  const std::string outputs[][2] = {
      {"redis keys", redis.cli("--scan")},
      {"MONITOR", monitor.log()},
      {"/v1/stats", testing::http(serve.port(), "GET", "/v1/stats").body},
      {"/metrics", testing::http(serve.port(), "GET", "/metrics").body},
      {"/dashboard", testing::http(serve.port(), "GET", "/dashboard").body},
      {"the server's log", serve.log()},
  };
  EXPECT_NE(outputs[1][1].find("EVALSHA"), std::string::npos) << "MONITOR saw no check";
  EXPECT_NE(outputs[2][1].find("\"top_denied\":[{"), std::string::npos) << outputs[2][1];
  for (const auto& [where, text] : outputs) {
    EXPECT_EQ(text.find(api_key), std::string::npos) << "the API key is in " << where;
    EXPECT_EQ(text.find(kIp), std::string::npos) << "the IP address is in " << where;
    EXPECT_EQ(text.find("sk-live-"), std::string::npos) << "part of the API key is in " << where;
  }

  // inspect finds each layer's key from the attributes, and reads the state without charging.
  const std::string attributes = " api_key=" + api_key + " ip=" + kIp + " endpoint=/search";
  const testing::BinaryRun inspect =
      testing::run_binary("inspect --backend " + redis.url() + attributes);
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  const std::vector<std::string> shown = field_lines(inspect.out, "redis key:");
  ASSERT_EQ(shown.size(), 3u) << inspect.out;  // edge, gateway, endpoint
  for (const std::string& key : shown) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key << " is not in Redis:\n"
                                                                    << inspect.out;
  }
  const std::vector<std::string> now = field_lines(inspect.out, "now:");
  ASSERT_EQ(now.size(), 3u) << inspect.out;
  // /search: all ten used (GCRA gives one back every 6 s: at most one since).
  EXPECT_LE(std::stoi(now[2]), 1) << inspect.out;
  EXPECT_NE(now[2].find(" of 10 left"), std::string::npos) << inspect.out;
  // The time until idle reads as people write it ("59.8 s"), not in raw microseconds.
  EXPECT_TRUE(now[2].ends_with(" s") || now[2].ends_with(" min")) << inspect.out;
  EXPECT_EQ(inspect.out.find("us\n"), std::string::npos) << inspect.out;
  // Reading changes nothing: the gateway's and the endpoint's whole state (DUMP) is the same after
  // two more reads, and no TTL was renewed. (The edge key, 13 of 1000 a minute, is idle again
  // within a second and may expire meanwhile, as it should: it is left out.)
  const std::vector<std::string> lasting(shown.begin() + 1, shown.end());
  const auto dumps = [&] {
    std::string all;
    for (const std::string& key : lasting) all += redis.cli("DUMP " + key);
    return all;
  };
  const auto ttls = [&] {
    std::vector<long long> all;
    for (const std::string& key : lasting) all.push_back(std::stoll(redis.cli("PTTL " + key)));
    return all;
  };
  const std::string dumped = dumps();
  const std::vector<long long> ttl_before = ttls();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(testing::run_binary("inspect --backend " + redis.url() + attributes).status, 0);
  }
  EXPECT_EQ(dumps(), dumped);
  const std::vector<long long> ttl_after = ttls();
  for (std::size_t i = 0; i < lasting.size(); ++i) {
    EXPECT_GT(ttl_after[i], 0) << lasting[i];
    EXPECT_LE(ttl_after[i], ttl_before[i]) << lasting[i];
  }
  std::remove(config.c_str());
}

TEST(KeySecrecy, AnHmacSecretChangesEveryNameAndNoneKeepsThemReadable) {
  RedisServer redis;
  const std::string api_key = fresh_api_key();
  const std::string secret = temp("secret");
  std::ofstream(secret) << "0123456789abcdef0123456789abcdef\n";
  const std::string hmac = temp("hmac.yaml");
  std::ofstream(hmac) << "backend:\n  key_secret_file: " << secret << "\n";
  const std::string attributes = " api_key=" + api_key + " ip=" + kIp + " endpoint=/search";
  const auto inspect_keys = [&](const std::string& config) {
    const testing::BinaryRun run =
        testing::run_binary("inspect --backend " + redis.url() +
                            (config.empty() ? "" : " --config " + config) + attributes);
    EXPECT_EQ(run.status, 0) << run.err;
    return field_lines(run.out, "redis key:");
  };
  {
    testing::ServeProcess serve({"--config", hmac, "--backend", redis.url()}, temp("hmac.log"));
    ASSERT_TRUE(serve.ready()) << serve.log();
    send_traffic(serve.port(), api_key);
  }
  const std::vector<std::string> keys = lines_of(redis.cli("--scan"));
  const std::vector<std::string> with_secret = inspect_keys(hmac);
  const std::vector<std::string> without = inspect_keys("");
  // The line break after the secret is not part of it: the same secret without one names the
  // same keys.
  const std::string bare_secret = temp("secret-bare");
  std::ofstream(bare_secret) << "0123456789abcdef0123456789abcdef";
  const std::string bare = temp("bare.yaml");
  std::ofstream(bare) << "backend:\n  key_secret_file: " << bare_secret << "\n";
  EXPECT_EQ(inspect_keys(bare), with_secret);
  ASSERT_EQ(with_secret.size(), 3u);
  ASSERT_EQ(without.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), with_secret[i]), keys.end()) << with_secret[i];
    EXPECT_NE(with_secret[i], without[i]);
    EXPECT_EQ(std::find(keys.begin(), keys.end(), without[i]), keys.end()) << without[i];
  }
  EXPECT_EQ(redis.cli("--scan").find(api_key), std::string::npos);

  // key_hash: none: the names spillway wrote before, the caller's values readable.
  const std::string none = temp("none.yaml");
  std::ofstream(none) << "backend:\n  key_hash: none\n";
  {
    testing::ServeProcess serve({"--config", none, "--backend", redis.url()}, temp("none.log"));
    ASSERT_TRUE(serve.ready()) << serve.log();
    send_traffic(serve.port(), api_key);
  }
  const std::string scan = redis.cli("--scan");
  EXPECT_NE(scan.find("spillway:gcra:60:60000000:60:{gateway:" + std::to_string(api_key.size()) +
                      ":" + api_key + "}"),
            std::string::npos)
      << scan;
  for (const std::string& path : {secret, hmac, none, bare_secret, bare}) {
    std::remove(path.c_str());
  }
}

TEST(KeySecrecy, ASecretFileThatCannotServeIsNamedByServeAndValidate) {
  const std::string short_secret = temp("short");
  std::ofstream(short_secret) << "too short\n";
  const std::string config = temp("short.yaml");
  std::ofstream(config) << "backend:\n  url: redis://127.0.0.1:1\n  key_secret_file: "
                        << short_secret << "\n";
  for (const std::string& command :
       {"validate " + config, "serve --listen 127.0.0.1:0 --config " + config}) {
    const testing::BinaryRun run = testing::run_binary(command);
    EXPECT_EQ(run.status, 1) << command << ": " << run.err;
    EXPECT_NE(run.err.find(config + ": line 3: backend.key_secret_file: the key secret must be at "
                                    "least 16 bytes, got 9"),
              std::string::npos)
        << command << ": " << run.err;
  }
  std::ofstream(config) << "backend:\n  url: redis://127.0.0.1:1\n  key_secret_file: "
                        << short_secret << ".missing\n";
  const testing::BinaryRun missing = testing::run_binary("validate " + config);
  EXPECT_EQ(missing.status, 1) << missing.err;
  EXPECT_NE(missing.err.find("backend.key_secret_file: cannot read \"" + short_secret +
                             ".missing\": No such file or directory"),
            std::string::npos)
      << missing.err;
  EXPECT_EQ(missing.err.find("at least 16 bytes"), std::string::npos) << missing.err;
  // A refused key_hash / key_secret_file pair is one error, not that error and its echoes.
  std::ofstream(config) << "backend:\n  url: redis://127.0.0.1:1\n  key_hash: hmac-sha256\n";
  const testing::BinaryRun no_file = testing::run_binary("validate " + config);
  EXPECT_EQ(no_file.status, 1) << no_file.err;
  EXPECT_EQ(std::count(no_file.err.begin(), no_file.err.end(), '\n'), 1) << no_file.err;
  EXPECT_NE(no_file.err.find("line 3: backend.key_hash: hmac-sha256 needs backend.key_secret_file"),
            std::string::npos)
      << no_file.err;
  for (const std::string& path : {short_secret, config}) std::remove(path.c_str());
}

TEST(Inspect, TheMemoryBackendShowsKeysAndStateAndBadArgumentsAreNamed) {
  const testing::BinaryRun run =
      testing::run_binary("inspect api_key=k1 ip=2001:db8::1 endpoint=/Search/");
  ASSERT_EQ(run.status, 0) << run.err;
  // The IPv6 address by its /64; the endpoint canonical; a fresh process: every key idle.
  EXPECT_NE(run.out.find("  key:         edge:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("2001:db8::/64"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("/search"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("layer gateway, plan free: gcra 60/1m"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("redis key:"), std::string::npos) << run.out;
  // The memory backend's state is in the serving process: not shown as if it were this one's.
  const std::vector<std::string> now = field_lines(run.out, "now:");
  ASSERT_EQ(now.size(), 3u) << run.out;
  EXPECT_EQ(now[0], "not readable here: the memory backend's state lives in the serving process");

  for (const auto& [args, status, message] : std::vector<std::tuple<std::string, int, std::string>>{
           {"inspect", 2, "give the request's attributes as NAME=VALUE"},
           {"inspect api_key", 2, "expected NAME=VALUE, got \"api_key\""},
           {"inspect ip=1.2.3.4 ip=1.2.3.5", 2, "attribute \"ip\" is given twice"},
           {"inspect ip=not-an-ip", 2, "ip: "},
           {"inspect ip=1.2.3.4", 1, "attribute \"api_key\" is required (layer gateway)"},
       }) {
    const testing::BinaryRun bad = testing::run_binary(args);
    EXPECT_EQ(bad.status, status) << args << ": " << bad.err;
    EXPECT_NE(bad.err.find("spillway inspect: " + message), std::string::npos)
        << args << ": " << bad.err;
  }
}

}  // namespace
}  // namespace spillway
