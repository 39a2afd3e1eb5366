// `server.client_ip_header` in the config file (docs/SPEC.md §7): which header the trusted
// proxies set; x-forwarded-for unless the operator says otherwise, and a typo is an error that
// names the line and the field.
#include <gtest/gtest.h>

#include <string>

#include "src/config/config.h"

namespace spillway::policy {
namespace {

TEST(ClientIpHeaderConfig, DefaultsToXForwardedFor) {
  Result<Config> config = parse_config("server:\n  trusted_proxies: [10.0.0.0/8]\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.client_ip_header, ClientIpHeader::kXForwardedFor);
  EXPECT_EQ(default_config().server.client_ip_header, ClientIpHeader::kXForwardedFor);
}

TEST(ClientIpHeaderConfig, NamesOneOfThreeHeaders) {
  const struct {
    const char* text;
    ClientIpHeader header;
  } cases[] = {{"x-forwarded-for", ClientIpHeader::kXForwardedFor},
               {"forwarded", ClientIpHeader::kForwarded},
               {"x-real-ip", ClientIpHeader::kXRealIp},
               {"X-Real-IP", ClientIpHeader::kXRealIp},
               {"Forwarded", ClientIpHeader::kForwarded}};
  for (const auto& c : cases) {
    Result<Config> config =
        parse_config(std::string("server:\n  client_ip_header: ") + c.text + "\n");
    ASSERT_TRUE(config.has_value()) << c.text << ": " << config.error().message;
    EXPECT_EQ(config->server.client_ip_header, c.header) << c.text;
  }
}

TEST(ClientIpHeaderConfig, AnythingElseIsAnErrorNamingLineAndField) {
  for (const char* bad : {"x-forwarded", "true-client-ip", "\"\"", "[forwarded]"}) {
    Result<Config> config = parse_config(std::string("server:\n  client_ip_header: ") + bad + "\n");
    ASSERT_FALSE(config.has_value()) << bad;
    const std::string& message = config.error().message;
    EXPECT_TRUE(message.starts_with("line 2: server.client_ip_header: ")) << message;
    EXPECT_NE(message.find("x-forwarded-for, forwarded or x-real-ip"), std::string::npos)
        << message;
  }
  Result<Config> typo = parse_config("server:\n  client_ip_header: x-forwarded\n");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message.find("\"x-forwarded\""), std::string::npos)
      << typo.error().message;
}

}  // namespace
}  // namespace spillway::policy
