// The config's tenant settings: by_plan.source, backend.tenants_file, server.admin_listen and
// server.admin_token_file are read, and wrong values are errors naming the field and line.
#include <gtest/gtest.h>

#include "src/config/config.h"

namespace spillway::policy {
namespace {

constexpr char kLayers[] =
    "layers:\n"
    "  - name: gateway\n"
    "    key: [api_key]\n"
    "    by_plan:\n"
    "      source: SOURCE\n"
    "      plans: {free: 60/min, pro: 600/min}\n"
    "      default: free\n";

std::string with_source(const std::string& source) {
  std::string text = kLayers;
  text.replace(text.find("SOURCE"), 6, source);
  return text;
}

TEST(TenantConfig, SourceStoreAndFileAreRead) {
  auto store = parse_config(with_source("store"));
  ASSERT_TRUE(store.has_value()) << store.error().message;
  EXPECT_EQ(store->policy.layers[0].by_plan->source, PlanSource::kStore);
  auto file = parse_config(with_source("file"));
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->policy.layers[0].by_plan->source, PlanSource::kFile);
  std::string without = kLayers;
  without.erase(without.find("      source: SOURCE\n"), 21);
  auto plain = parse_config(without);
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_EQ(plain->policy.layers[0].by_plan->source, PlanSource::kFile);
}

TEST(TenantConfig, AnotherSourceIsAnErrorNamingItsLine) {
  auto bad = parse_config(with_source("redis"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("line 5"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("layers[0].by_plan.source"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("must be file"), std::string::npos);
}

TEST(TenantConfig, UntilLoadedIsDenyUnlessTheFileSaysDefaults) {
  auto defaults = parse_config("");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->tenants.until_loaded, UntilLoaded::kDeny);
  for (const auto& [text, expected] :
       {std::pair{"deny", UntilLoaded::kDeny}, std::pair{"defaults", UntilLoaded::kDefaults}}) {
    auto config = parse_config(std::string("tenants:\n  until_loaded: ") + text + "\n");
    ASSERT_TRUE(config.has_value()) << config.error().message;
    EXPECT_EQ(config->tenants.until_loaded, expected) << text;
  }
}

TEST(TenantConfig, AnotherUntilLoadedOrFieldIsAnErrorNamingItsLine) {
  for (const auto& [text, error] :
       {std::pair{"tenants:\n  until_loaded: allow\n",
                  "line 2: tenants.until_loaded: \"allow\" must be deny or defaults"},
        std::pair{"tenants:\n  until_loaded: [deny]\n", "line 2: tenants.until_loaded:"},
        std::pair{"tenants:\n  until_load: deny\n", "line 2: tenants.until_load"},
        std::pair{"tenants: deny\n", "line 1: tenants"}}) {
    auto bad = parse_config(text);
    ASSERT_FALSE(bad.has_value()) << text;
    EXPECT_NE(bad.error().message.find(error), std::string::npos)
        << text << ": " << bad.error().message;
  }
}

TEST(TenantConfig, AdminAndTenantsFileFieldsAreRead) {
  auto config = parse_config(
      "server:\n  admin_listen: 127.0.0.1:9090\n  admin_token_file: /etc/spillway/tokens\n"
      "backend:\n  tenants_file: /var/lib/spillway/tenants\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->server.admin_listen, "127.0.0.1:9090");
  EXPECT_EQ(config->server.admin_token_file, "/etc/spillway/tokens");
  EXPECT_EQ(config->backend.tenants_file, "/var/lib/spillway/tenants");
  auto defaults = parse_config("");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->server.admin_listen, "");
  EXPECT_EQ(defaults->backend.tenants_file, "");
}

TEST(TenantConfig, BadAdminAddressAndEmptyPathsAreErrors) {
  auto address = parse_config("server:\n  admin_listen: nowhere\n");
  ASSERT_FALSE(address.has_value());
  EXPECT_NE(address.error().message.find("server.admin_listen"), std::string::npos);
  auto token = parse_config("server:\n  admin_token_file: ''\n");
  ASSERT_FALSE(token.has_value());
  EXPECT_NE(token.error().message.find("server.admin_token_file"), std::string::npos);
  auto file = parse_config("backend:\n  tenants_file: ''\n");
  ASSERT_FALSE(file.has_value());
  EXPECT_NE(file.error().message.find("backend.tenants_file"), std::string::npos);
}

}  // namespace
}  // namespace spillway::policy
