// Behind a proxy that is not trusted, no silent shared budget (src/server/untrusted_forwarders.h):
// with the built-in config (server.trusted_proxies: []), a /v1/auth request carrying
// X-Forwarded-For (or Forwarded, X-Real-IP) is keyed by the peer's own address, as before, and now
// says so: spillway_untrusted_forwarded_total counts every such request and the log has one line
// per peer, however many requests it sends. The peers remembered for that are bounded.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "src/server/untrusted_forwarders.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/text_lines.h"

namespace spillway {
namespace {

// How many times `needle` occurs in `text`.
std::size_t untrusted_count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// The value of the sample line `name ` in Prometheus text, or -1.
long long untrusted_sample(const std::string& metrics, const std::string& name) {
  for (const std::string& line : testing::lines_of(metrics)) {
    if (line.starts_with(name + " ")) return std::stoll(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(UntrustedForwarded, CountedAndLoggedOncePerPeerWithTheBuiltInConfig) {
  const std::string log =
      "/tmp/spillway_untrusted_forwarded_" + std::to_string(::getpid()) + ".log";
  testing::ServeProcess serve({}, log);  // the built-in config: no trusted proxy
  ASSERT_TRUE(serve.ready()) << serve.log();
  const std::uint16_t port = serve.port();
  const auto auth = [&](const char* source, const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> headers = extra;
    headers["X-API-Key"] = "untrusted-forwarded-key";
    headers["X-Original-URI"] = "/search";
    testing::HttpConnection connection(port, source);
    return connection.request("GET", "/v1/auth", "", headers).status;
  };
  EXPECT_EQ(untrusted_sample(testing::http(port, "GET", "/metrics").body,
                             "spillway_untrusted_forwarded_total"),
            0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth("127.0.0.1", {{"X-Forwarded-For", "198.51.100." + std::to_string(i)}}), 204);
  }
  EXPECT_EQ(auth("127.0.0.2", {{"X-Real-IP", "198.51.100.7"}}), 204);
  EXPECT_EQ(auth("127.0.0.2", {{"Forwarded", "for=198.51.100.8"}}), 204);
  EXPECT_EQ(auth("127.0.0.3", {}), 204);  // no forwarding header: nothing to say
  EXPECT_EQ(untrusted_sample(testing::http(port, "GET", "/metrics").body,
                             "spillway_untrusted_forwarded_total"),
            5);
  ASSERT_EQ(serve.stop(SIGTERM), 0);
  const std::string text = serve.log();
  EXPECT_EQ(untrusted_count_of(text,
                               "spillway: 127.0.0.1 sent X-Forwarded-For but is not in "
                               "server.trusted_proxies"),
            1u)
      << text;
  EXPECT_EQ(untrusted_count_of(text,
                               "spillway: 127.0.0.2 sent X-Real-IP but is not in "
                               "server.trusted_proxies"),
            1u)
      << text;
  EXPECT_EQ(untrusted_count_of(text, "127.0.0.3 sent"), 0u) << text;
  // The forged addresses are the client's claims, not the peer: never logged.
  EXPECT_EQ(text.find("198.51.100."), std::string::npos) << text;
  std::remove(log.c_str());
}

TEST(UntrustedForwardersBound, OneLinePerPeerUpToTheBoundThenOneLineForAllTheRest) {
  std::vector<std::string> lines;
  server::UntrustedForwarders peers([&](const std::string& line) { lines.push_back(line); });
  const std::size_t bound = server::UntrustedForwarders::kMaxPeers;
  for (std::size_t i = 0; i < bound + 500; ++i) {
    const std::string peer = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    peers.saw(peer, "X-Forwarded-For");
    peers.saw(peer, "X-Forwarded-For");
  }
  peers.saw("10.0.0.0", "Forwarded");  // remembered: said already
  EXPECT_EQ(peers.count(), 2 * (bound + 500) + 1);
  ASSERT_EQ(lines.size(), bound + 1);
  EXPECT_EQ(lines.front().find("spillway: 10.0.0.0 sent X-Forwarded-For"), 0u) << lines.front();
  EXPECT_NE(lines.back().find("further ones are not named"), std::string::npos) << lines.back();
  std::string metrics;
  peers.append_metrics(metrics);
  EXPECT_NE(metrics.find("# TYPE spillway_untrusted_forwarded_total counter\n"
                         "spillway_untrusted_forwarded_total " +
                         std::to_string(2 * (bound + 500) + 1) + "\n"),
            std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace spillway
