// parse_http_url, the one parser of the command line's URLs (bench --http, --admin): each form it
// takes, and an error naming each thing it refuses; the callers' flags in front of it.
#include <gtest/gtest.h>

#include <string>

#include "src/cli/admin_client.h"
#include "src/cli/http_client.h"
#include "src/cli/http_load.h"

namespace spillway::cli {
namespace {

TEST(HttpUrl, TakesNamesAddressesPortsAndPaths) {
  const struct {
    const char* url;
    const char* host;
    const char* port;
    const char* path;
  } cases[] = {
      {"http://localhost:8080/v1/check", "localhost", "8080", "/v1/check"},
      {"http://127.0.0.1", "127.0.0.1", "80", "/"},
      {"http://[::1]:9091", "::1", "9091", "/"},
      {"http://[::1]/x?y=1", "::1", "80", "/x?y=1"},
  };
  for (const auto& c : cases) {
    const Result<HttpUrl> url = parse_http_url(c.url, "80");
    ASSERT_TRUE(url.has_value()) << c.url << ": " << url.error().message;
    EXPECT_EQ(url->host, c.host) << c.url;
    EXPECT_EQ(url->port, c.port) << c.url;
    EXPECT_EQ(url->path, c.path) << c.url;
  }
}

TEST(HttpUrl, NamesWhatIsWrong) {
  const struct {
    const char* url;
    const char* default_port;
    const char* named;
  } cases[] = {
      {"ftp://x:1", "80", "it must start with http://"},
      {"", "80", "it must start with http://"},
      {"HTTP://x:1", "80", "it must start with http://"},
      {"http://", "80", "it names no host"},
      {"http://[]:80/", "80", "it names no host"},
      {"http://host:/", "80", "port \"\" is not a number 1 to 65535"},
      {"http://host:-1/", "80", "port \"-1\" is not a number 1 to 65535"},
      {"http://[::1:80/", "80", "opens \"[\" and never closes it"},
      {"http://[::1]80/", "80", "only \":PORT\" may follow"},
      {"http://:80/", "80", "it names no host"},
      {"http://host/", "", "it names no port"},
      {"http://host:0/", "", "port \"0\" is not a number 1 to 65535"},
      {"http://host:65536/", "80", "port \"65536\" is not a number 1 to 65535"},
      {"http://host:8o/", "80", "port \"8o\" is not a number 1 to 65535"},
      {"http://host:000080/", "80", "port \"000080\" is not a number 1 to 65535"},
  };
  for (const auto& c : cases) {
    const Result<HttpUrl> url = parse_http_url(c.url, c.default_port);
    ASSERT_FALSE(url.has_value()) << c.url;
    EXPECT_EQ(url.error().code, Errc::kInvalidArgument);
    EXPECT_NE(url.error().message.find(c.named), std::string::npos)
        << c.url << ": " << url.error().message;
  }
}

TEST(HttpUrl, AHugeUrlIsParsedOrRefusedWithoutHarm) {
  const std::string host(100'000, 'h');
  const Result<HttpUrl> long_host = parse_http_url("http://" + host + ":80/x", "80");
  ASSERT_TRUE(long_host.has_value());
  EXPECT_EQ(long_host->host.size(), host.size());
  const Result<HttpUrl> long_port = parse_http_url("http://h:" + std::string(100'000, '9'), "80");
  ASSERT_FALSE(long_port.has_value());
  EXPECT_EQ(long_port.error().message, "port \"9999999999999999...\" is not a number 1 to 65535");
  // The flags quote at most kUrlShown bytes of the URL, control bytes escaped: one short line.
  const std::string hostile = "ftp://" + std::string(100'000, 'x') + "\n";
  for (const std::string& message :
       {parse_http_target(hostile).error().message, parse_admin_url(hostile).error().message}) {
    EXPECT_LT(message.size(), 400u) << message.substr(0, 100);
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  const Result<HttpTarget> newline = parse_http_target("http://h:8\n0/");
  ASSERT_FALSE(newline.has_value());
  EXPECT_EQ(newline.error().message.find('\n'), std::string::npos) << newline.error().message;
}

TEST(HttpUrl, EachFlagPutsItsNameInFront) {
  const Result<HttpTarget> bench = parse_http_target("http://host:99999/");
  ASSERT_FALSE(bench.has_value());
  EXPECT_EQ(bench.error().message,
            "--http \"http://host:99999/\": port \"99999\" is not a number 1 to 65535");
  const Result<AdminEndpoint> admin = parse_admin_url("http://host/");
  ASSERT_FALSE(admin.has_value());
  EXPECT_EQ(admin.error().message,
            "--admin \"http://host/\": expected http://host:port (server.admin_listen): it names "
            "no port");
  const Result<AdminEndpoint> ok = parse_admin_url("http://[::1]:9091/ignored");
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(ok->host, "::1");
  EXPECT_EQ(ok->port, "9091");
}

}  // namespace
}  // namespace spillway::cli
