// The config file's rls section: the rules of the gRPC listener and how it answers (see
// config.h for its fields).
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"

namespace spillway::policy {

void parse_rls(const YAML::Node& node, RlsConfig& rls) {
  if (node.IsNull()) return;
  expect_map(node, "rls",
             "a mapping of config, charge_on_deny, response_headers, on_error, watch, tenant_key");
  Fields fields(
      node, "rls",
      {"config", "charge_on_deny", "response_headers", "on_error", "watch", "tenant_key"});
  if (const Entry* config = fields.find("config"))
    collect([&] {
      rls.config = scalar(config->value, fields.path("config"), "a file or directory path");
      if (rls.config.empty()) fail(config->value, fields.path("config"), "must not be empty");
    });
  if (const Entry* charge = fields.find("charge_on_deny"))
    collect([&] { rls.charge_on_deny = boolean(charge->value, fields.path("charge_on_deny")); });
  collect([&] {
    read_choice(fields, "response_headers",
                {{"off", RlsHeaders::kOff},
                 {"draft", RlsHeaders::kDraft},
                 {"x-ratelimit", RlsHeaders::kXRateLimit}},
                rls.response_headers, {.one_of = true});
  });
  collect([&] {
    read_choice(
        fields, "on_error",
        {{"error", RlsOnError::kError}, {"allow", RlsOnError::kAllow}, {"deny", RlsOnError::kDeny}},
        rls.on_error, {.one_of = true});
  });
  if (const Entry* tenant = fields.find("tenant_key"))
    collect([&] {
      rls.tenant_key = scalar(tenant->value, fields.path("tenant_key"), "a descriptor key");
      if (rls.tenant_key.empty())
        fail(tenant->value, fields.path("tenant_key"), "must not be empty");
    });
  if (const Entry* watch = fields.find("watch"))
    collect([&] {
      const bool off = watch->value.IsScalar() &&
                       (watch->value.Scalar() == "0" || watch->value.Scalar() == "off");
      rls.watch = off ? std::chrono::milliseconds(0) : millis(*watch, fields.path("watch"));
    });
}

}  // namespace spillway::policy
