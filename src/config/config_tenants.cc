// The config file's tenants section: what `source: store` layers decide before this instance's
// copy of the tenant records was first loaded (see config.h).
#include <string>

#include "src/config/config_sections.h"
#include "src/config/yaml_fields.h"
#include "src/core/text.h"

namespace spillway::policy {

void parse_tenants(const YAML::Node& node, TenantsConfig& tenants) {
  if (node.IsNull()) return;
  expect_map(node, "tenants", "a mapping of until_loaded");
  Fields fields(node, "tenants", {"until_loaded"});
  if (const Entry* until = fields.find("until_loaded"))
    collect([&] {
      const std::string path = fields.path("until_loaded");
      const std::string text = scalar(until->value, path, "deny or defaults");
      if (text == "deny") {
        tenants.until_loaded = UntilLoaded::kDeny;
      } else if (text == "defaults") {
        tenants.until_loaded = UntilLoaded::kDefaults;
      } else {
        fail(until->value, path, quote_for_error(text) + " must be deny or defaults");
      }
    });
}

}  // namespace spillway::policy
